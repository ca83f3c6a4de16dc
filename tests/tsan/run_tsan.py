#!/usr/bin/env python3
"""Runs the memviz agent under ThreadSanitizer in the threaded test programs
(`make tsan-test`; tests/tsan/tsan.mk builds what it needs).

How TSan hosts the agent. The test programs are not instrumented; the agent
is (build/tsan/libmemviz.so, its sources compiled with -fsanitize=thread).
Each program runs with

    LD_PRELOAD="libmvztsangate.so build/tsan/libmemviz.so libtsan.so.2"
    TSAN_OPTIONS="halt_on_error=0 log_path=... allocator_may_return_null=1 ..."

  - libtsan.so.2 must be preloaded (it is only a dependency of the agent,
    which would load it after libc): its interceptors (pthread_create, mutexes,
    malloc, memset, ...) must come before libc's in symbol lookup, or TSan
    sees no thread and no synchronisation.
  - The agent comes before libtsan, so the program's malloc reaches the
    agent's hooks, and the agent's "real" allocator (dlsym(RTLD_NEXT)) is
    TSan's.
  - The gate (tests/tsan/gate.c, not instrumented) comes first: TSan calls
    malloc, realloc, free and sigaction itself while it sets up the process
    and each new thread, before that thread's TSan state exists, and the
    instrumented agent crashes if entered then. The gate sends those calls to
    TSan/libc and every call from a thread TSan has set up to the agent, by
    tail calls, so it leaves no frame in recorded stacks.

What is checked, per program:
  - no ThreadSanitizer report at all (log_path files, stderr);
  - the program behaves as with the normal agent (exit status, stdout);
  - the trace is the normal agent's, number for number: the same program
    is run with build/lib/libmemviz.so and the two reports must agree on
    allocations, frees, bytes, leaks, temporaries and threads, in total and
    per function (per thread and per function against the program's own
    counts for mt64; invariants only for threadexit, which is not
    deterministic) - so the agent's hooks really were the ones called - and
    both traces have no damage, no agent frames and no gate frames. The one
    expected difference is exact: glibc's TLS vector of each thread is 32
    bytes larger under TSan (two more modules with TLS; see DTV_EXTRA_BYTES);
  - a positive control (tests/tsan/race_control.c, a memset race) IS
    reported, so that silence means something;
  - the CLI's own threads (--tsan-memviz, memviz built with
    -fsanitize=thread): every command reads traces without a report and
    prints what the normal CLI prints.

Programs not run here, and why:
  - doublefree: TSan's allocator replaces glibc's, and glibc's double-free
    abort is what the program tests (under TSan it returns normally);
  - spawn vfork: TSan turns vfork into fork, so the program makes an extra
    process image (the agent traces it correctly, but it is not the same
    program any more);
  - static_prog: statically linked, nothing can be preloaded;
  - the remaining single-threaded ones (recursion, execfail, sigdispo, ...)
    exercise nothing concurrent that the programs above do not.
forkexec and posix-spawn need die_after_fork=0: a fork child's agent starts
a writer thread, which TSan refuses by default after a multi-threaded fork.

What TSan does not see: the ring's slot reservation is an inline-asm xadd
(atomic with respect to signal handlers, not other threads: only the owner
thread writes head), which TSan does not instrument; every other access
to the rings (slot publication by a release store of its key, the consumer's
acquire loads, tail and in-flight marks) is a C11 atomic TSan checks.

Only the Python standard library is used; the checking helpers come from
tests/integration/run_tests.py and cases_stress.py.
"""

import argparse
import glob
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import run_tests as rt  # noqa: E402
import cases_stress  # noqa: E402

RUN_TIMEOUT = 300
BASE_TSAN_OPTIONS = [
    "halt_on_error=0",             # report everything, do not stop at the first
    "exitcode=66",                 # a process with reports exits 66 (caught as a status mismatch too)
    "second_deadlock_stack=1",     # both stacks of a lock-order inversion
    "allocator_may_return_null=1",  # failing allocations return NULL, as glibc's do (realloc, cxx)
]

# The keys of the summary that must be equal with both agents; peak_bytes
# too for programs whose peak does not depend on thread interleaving.
EXACT_KEYS = ("allocations", "frees", "allocated_bytes", "leaked_bytes", "leaked_blocks", "temporary",
              "threads", "unmatched_frees", "mismatched_frees")
SITE_KEYS = ("allocations", "allocated_bytes", "leaked_bytes", "leaked_blocks", "temporary")


class Prog:
    """name, program, args; tsan: extra TSAN_OPTIONS; compare: "exact" (both
    reports agree), "mt64" (each agrees with the program's counts),
    "threadexit" (invariants); peak: compare peak_bytes too; exit: the
    expected exit status (negative: killed by that signal)."""

    def __init__(self, name, prog, args=(), tsan=(), compare="exact", peak=False, exit=0, why="",
                 agent_env=None):
        self.name, self.prog, self.args, self.tsan = name, prog, list(args), list(tsan)
        self.compare, self.peak, self.exit, self.why = compare, peak, exit, why
        self.agent_env = agent_env or {}


PROGRAMS = [
    Prog("threads", "threads", why="8 threads churning and leaking"),
    Prog("threads-stress", "threads", ["20000"], why="8 threads, 160,000 temporaries: rings, flushes"),
    Prog("threadchurn", "threadchurn", why="3,000 short-lived threads: ring registration and release"),
    Prog("threadexit", "threadexit", compare="threadexit", exit=5,
         why="exit() while 4 threads allocate: the final flush races the producers"),
    Prog("mt64", "mt64", ["5", "64"], compare="mt64",
         why="64 threads for 5 s, storms that fill the rings"),
    Prog("lifecycle", "lifecycle", why="C++ static/thread_local constructors and destructors, a thread"),
    Prog("phases", "phases", why="a named worker thread after main's phases"),
    Prog("instrumented", "instrumented",
         why="the instrumentation API: a stopwatch in two threads, tags through the rings, "
             "the log and phases, against the writer reading the instruments"),
    Prog("tablewatch", "tablewatch",
         why="a polled value and a table read on the poller thread, under the program's lock"),
    # The program allocates in signal handlers on purpose; TSan flags malloc
    # there (the agent's hook necessarily calls the real malloc), and its
    # report of that changes errno inside the handler, which it then flags
    # as well. Neither is the agent's.
    Prog("sighandler", "sighandler", tsan=["report_signal_unsafe=0"], peak=True,
         why="allocations in signal handlers, nested in the agent's hooks"),
    Prog("churn", "churn", peak=True, why="single-threaded: the program against the writer thread"),
    # The ways out that hand the end of the trace to the writer thread.
    Prog("exitpaths-exit", "exitpaths", ["exit"], peak=True, exit=11, why="exit(): on_exit handler"),
    Prog("exitpaths-_exit", "exitpaths", ["_exit"], peak=True, exit=12,
         why="_exit(): the trace is finished by the writer thread"),
    # TSan's own handlers would take SIGABRT/SIGSEGV over (and report the
    # crash); with them off the agent's fatal-signal handler runs, as it
    # does without TSan.
    Prog("exitpaths-abort", "exitpaths", ["abort"], tsan=["handle_abort=0"], peak=True, exit=-6,
         why="abort(): the agent's fatal-signal handler and the writer thread"),
    Prog("segv", "segv", tsan=["handle_segv=0"], peak=True, exit=-11,
         why="SIGSEGV: the agent's fatal-signal handler and the writer thread"),
    # Single-threaded programs: the program's thread against the writer
    # thread, and the agent's other paths.
    Prog("early", "early", why="a library constructor allocating before main (and before the agent's)"),
    Prog("cxx", "cxx", why="operator new/delete, a failing new (NULL from TSan's allocator)"),
    Prog("realloc", "realloc", peak=True, why="realloc: two events around the real call"),
    Prog("aligned", "aligned", peak=True, why="aligned entry points"),
    Prog("dlopen", "dlopen", why="dlopen/dlclose: module rescans against the writer's"),
    Prog("fdchaos", "fdchaos", peak=True, why="closefrom(3) and reuse of the trace's descriptor"),
    Prog("stacks", "stacks", peak=True, why="4,096 distinct stacks: the stack table under meta_lock"),
    Prog("nofp", "nofp", peak=True, why="the CFI unwinder on code without frame pointers"),
    Prog("sigkill", "sigkill", peak=True, exit=-9, why="SIGKILL: the trace as the writer left it"),
    Prog("posix-spawn", "spawn", ["spawn"], tsan=["die_after_fork=0"],
         why="posix_spawn of churn: the agent starts again in the new image"),
    # A fork child starts a new writer thread: TSan does not support new
    # threads after a multi-threaded fork and dies there by default
    # (die_after_fork=1). The agent's after-fork path only uses locks it
    # re-initialised, so the child is checked with die_after_fork=0.
    Prog("forkexec", "forkexec", tsan=["die_after_fork=0"],
         why="fork and exec children: the agent restarts in each, under TSan too"),
    # The call graph: each thread's tree its own, written by the thread as
    # it ends and by the exiting thread for the rest.
    Prog("callgraph", "calls", agent_env={"MEMVIZ_CALLGRAPH": "1"},
         why="--callgraph: threads' trees, exit() from deep frames, allocation stacks"),
    Prog("callgraph-pg", "calls_pg", agent_env={"MEMVIZ_CALLGRAPH": "1"},
         why="--callgraph on a -pg build: return addresses taken over in three threads"),
]


class Env:
    def __init__(self, a):
        self.memviz = os.path.abspath(a.memviz)
        self.asan = None
        self.progs = os.path.abspath(a.programs)

    def prog(self, name):
        return os.path.join(self.progs, name)


def clean_environ():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("MEMVIZ_") or k in ("LD_PRELOAD", "TSAN_OPTIONS"):
            del env[k]
    return env


def run_prog(a, env, p, d, mode, args=None):
    """Runs p in directory d with the normal agent (mode "ref") or under
    TSan ("tsan"). Returns (rc, stdout, stderr, seconds, trace)."""
    os.makedirs(d, exist_ok=True)
    trace = os.path.join(d, p.name + ".mvz")
    environ = clean_environ()
    environ["MEMVIZ_OUTPUT"] = trace
    environ.update(p.agent_env)
    if mode == "ref":
        environ["LD_PRELOAD"] = a.agent
    else:
        environ["LD_PRELOAD"] = " ".join([a.gate, a.tsan_agent, a.libtsan])
        opts = BASE_TSAN_OPTIONS + ["log_path=" + os.path.join(d, "tsan")] + p.tsan
        if a.suppressions:
            opts.append("suppressions=" + a.suppressions)
        environ["TSAN_OPTIONS"] = " ".join(opts)
    cmd = [env.prog(p.prog) if p.prog != "race_control" else a.control] + (args if args is not None else p.args)
    rc, out, err, secs = rt.run(cmd, cwd=d, env=environ, timeout=RUN_TIMEOUT)
    return rc, out, err, secs, trace


def tsan_reports(d, err):
    """The ThreadSanitizer output of a run: its log files' contents and any
    stderr line that mentions ThreadSanitizer (before log_path applies)."""
    texts = []
    for f in sorted(glob.glob(os.path.join(d, "tsan.*"))):
        with open(f, "rb") as fh:
            t = fh.read().decode("utf-8", "replace")
        if t.strip():
            texts.append((f, t))
    lines = [l for l in err.decode("utf-8", "replace").splitlines() if "ThreadSanitizer" in l]
    if lines:
        texts.append(("stderr", "\n".join(lines)))
    return texts


def summaries(texts):
    out = []
    for f, t in texts:
        for line in t.splitlines():
            if line.startswith("SUMMARY: ThreadSanitizer") or "ThreadSanitizer: starting new threads" in line:
                out.append(line.strip())
        if not any(l.startswith("SUMMARY") for l in t.splitlines()):
            out.append(t.strip().splitlines()[0] if t.strip() else f)
    return out


# glibc's TLS vector (DTV) of each new thread, allocated by pthread_create
# (ld.so's allocate_dtv), has 16 bytes per module with TLS: libtsan.so.2 and
# the gate add two such modules, so under TSan every DTV is exactly 32 bytes
# larger. Everything else must be byte for byte the same.
DTV_FUNCTION = "allocate_dtv"
DTV_EXTRA_BYTES = 2 * 16


def is_dtv(site):
    return DTV_FUNCTION in rt.frame_names(site)[:3]


def functions(rep, tsan=False):
    """{innermost function: {SITE_KEYS sums}}; tsan: DTV sites corrected by
    DTV_EXTRA_BYTES per block, to compare with the normal agent's."""
    out = {}
    for s in rt.sites_of(rep):
        names = rt.frame_names(s)
        fn = names[0] if names else "?"
        d = out.setdefault(fn, {k: 0 for k in SITE_KEYS})
        for k in SITE_KEYS:
            d[k] += s.get(k, 0)
        if tsan and is_dtv(s):
            d["allocated_bytes"] -= DTV_EXTRA_BYTES * s.get("allocations", 0)
            d["leaked_bytes"] -= DTV_EXTRA_BYTES * s.get("leaked_blocks", 0)
    return out


def corrected_summary(rep, keys):
    """The summary of a TSan run's report as the normal agent would have it
    (DTV sizes, see above)."""
    summ = dict((rep.get("summary") or {}))
    for s in rt.sites_of(rep):
        if is_dtv(s):
            summ["allocated_bytes"] = summ.get("allocated_bytes", 0) - DTV_EXTRA_BYTES * s.get("allocations", 0)
            summ["leaked_bytes"] = summ.get("leaked_bytes", 0) - DTV_EXTRA_BYTES * s.get("leaked_blocks", 0)
    return {k: summ.get(k) for k in keys}


def reports_in(case, env, d, label):
    """{(exe, exit status or signal): report} of every trace in d."""
    out = {}
    for t in sorted(glob.glob(os.path.join(d, "*.mvz"))):
        rep = rt.report_json(case, env, t, "%s %s" % (label, os.path.basename(t)))
        if rep is None:
            continue
        proc = rep.get("process") or {}
        bad = [f for s in rt.sites_of(rep) for f in s.get("frames") or []
               if "libmvztsangate" in str(f.get("module") or "")]
        case.check("%s %s: no frame of the gate in any stack" % (label, os.path.basename(t)), not bad,
                   "e.g. %r" % (bad[:1],))
        key = (os.path.basename(str(proc.get("exe", ""))), proc.get("exit_status"), proc.get("exit_signal"),
               proc.get("exit_how"))
        case.check("%s: one trace of %r" % (label, key), key not in out, "two traces of %r in %s" % (key, d))
        out[key] = rep
    return out


def compare_exact(case, p, refs, tsans):
    case.eq("same traces with both agents (exe, exit)", sorted(refs, key=repr), sorted(tsans, key=repr))
    keys = EXACT_KEYS + (("peak_bytes",) if p.peak else ())
    for key in sorted(set(refs) & set(tsans), key=repr):
        r, t = refs[key], tsans[key]
        lab = "%s" % key[0]
        rs = r.get("summary") or {}
        case.eq("%s: summary (%s) as with the normal agent (TLS vectors 32 bytes larger)"
                % (lab, ", ".join(keys)), {k: rs.get(k) for k in keys}, corrected_summary(t, keys))
        rf, tf = functions(r), functions(t, tsan=True)
        diff = {fn: (rf.get(fn), tf.get(fn)) for fn in set(rf) | set(tf) if rf.get(fn) != tf.get(fn)}
        case.check("%s: per-function allocations, bytes, leaks, temporaries as with the normal agent "
                   "(%d functions)" % (lab, len(rf)), not diff,
                   "; ".join("%s: normal %s, tsan %s" % (fn, v[0], v[1]) for fn, v in sorted(diff.items())[:6]))


def check_threadexit(case, label, reps):
    if not case.check("%s: one trace" % label, len(reps) == 1, "%d traces" % len(reps)):
        return
    rep = list(reps.values())[0]
    rt.check_process(case, rep, label, exe="threadexit", status=5, how="exit")
    sites = rt.select_sites(rep, "worker_churn")
    n = sum(s.get("allocations", 0) for s in sites)
    case.check("%s: worker_churn allocated" % label, n > 0, "%d allocations" % n)
    case.eq("%s: worker_churn allocated 64 bytes each" % label, 64 * n,
            sum(s.get("allocated_bytes", 0) for s in sites))
    case.eq("%s: worker_churn leaked at most one block per worker" % label, (0, 256),
            sum(s.get("leaked_bytes", 0) for s in sites))


def run_case(a, env, workroot, p, rep_i):
    name = p.name if a.repeat == 1 else "%s-%d" % (p.name, rep_i)
    case = rt.Case(name, workroot)
    results = {}
    for mode in ("ref", "tsan"):
        d = os.path.join(case.dir, mode)
        rc, out, err, secs, trace = run_prog(a, env, p, d, mode)
        results[mode] = (rc, out, err)
        case.eq("%s: exit status" % mode, p.exit, rc)
        if mode == "tsan":
            texts = tsan_reports(d, err)
            ok = case.check("no ThreadSanitizer report (%.1f s)" % secs, not texts,
                            "%d report file(s): %s; first report:\n%s" % (
                                len(texts), "; ".join(summaries(texts)[:12]),
                                "\n".join(texts[0][1].splitlines()[:60]) if texts else ""))
            if not ok:
                print("    logs kept in %s" % d)
        case.check("%s: trace written" % mode, os.path.isfile(trace) and os.path.getsize(trace) > 0, trace)
    if p.compare != "mt64" and not p.agent_env.get("MEMVIZ_CALLGRAPH"):
        case.eq("stdout as with the normal agent", results["ref"][1], results["tsan"][1])
    elif p.compare != "mt64":  # calls' qsort is TSan's own there: another number of compares
        case.check("stdout as with the normal agent, but for the compares of TSan's qsort",
                   results["tsan"][1].startswith(b"compare "), repr(results["tsan"][1]))
    refs = reports_in(case, env, os.path.join(case.dir, "ref"), "normal")
    tsans = reports_in(case, env, os.path.join(case.dir, "tsan"), "tsan")
    if p.compare == "exact":
        compare_exact(case, p, refs, tsans)
    elif p.compare == "mt64":
        for label, reps, (rc, out, err) in (("normal", refs, results["ref"]), ("tsan", tsans, results["tsan"])):
            if case.check("%s: one trace" % label, len(reps) == 1, "%d traces" % len(reps)):
                cases_stress.check_mt64(case, list(reps.values())[0], out, label, int(p.args[1]))
    elif p.compare == "threadexit":
        check_threadexit(case, "normal", refs)
        check_threadexit(case, "tsan", tsans)
    return case


def run_control(a, env, workroot):
    """The positive control: TSan must report the memset race."""
    case = rt.Case("control-race", workroot)
    p = Prog("control", "race_control")
    d = os.path.join(case.dir, "tsan")
    rc, out, err, secs, trace = run_prog(a, env, p, d, "tsan")
    texts = tsan_reports(d, err)
    alltext = "\n".join(t for _, t in texts)
    case.check("TSan reports the control's data race (in memset, in writer)",
               "WARNING: ThreadSanitizer: data race" in alltext and "writer" in alltext
               and "memset" in alltext, "reports: %s" % (summaries(texts) or "none"))
    case.eq("control exits 66 (TSan's status after a report)", 66, rc)
    case.check("the TSan agent recorded the control in the same process (trace written)",
               os.path.isfile(trace), trace)
    if os.path.isfile(trace):
        rep = rt.report_json(case, env, trace, "control")
        if rep is not None:
            rt.check_functions(case, rep, "control", {
                "writer": dict(allocations=2, allocated_bytes=200, leaked_bytes=200, leaked_blocks=2,
                               entries={"malloc": 2}, file="race_control.c")})
    with open(a.tsan_agent, "rb") as f:
        case.check("the TSan agent is instrumented (calls __tsan_func_entry)",
                   b"__tsan_func_entry" in f.read(), a.tsan_agent)
    return case


def run_cli(a, env, workroot):
    """The CLI's own threads (the replay's read-ahead and the symbols warmed
    meanwhile): a TSan build of memviz reads traces of a multi-threaded and
    a single-threaded program with every command, with no report and the
    normal CLI's output."""
    case = rt.Case("cli-threads", workroot)
    traces = []
    for prog, args in (("threads", ["2000"]), ("phases", [])):
        trace = os.path.join(case.dir, prog + ".mvz")
        rc, _, err, _ = rt.run([a.memviz, "run", "-o", trace, "--", env.prog(prog)] + args, cwd=case.dir)
        if case.check("%s: traced" % prog, rc == 0 and os.path.isfile(trace), err.decode(errors="replace")):
            traces.append(trace)
    cmds = []
    for t in traces:
        cmds += [["report", t], ["report", "--json", t], ["timeline", "--csv", "-", t],
                 ["export", "--format", "speedscope", "-o", "-", t]]
    if len(traces) == 2:
        cmds.append(["diff", traces[0], traces[1]])
    for i, cmd in enumerate(cmds):
        logdir = os.path.join(case.dir, "cli-%d" % i)
        os.makedirs(logdir, exist_ok=True)
        tenv = dict(clean_environ(), TSAN_OPTIONS="halt_on_error=0 log_path=%s/tsan" % logdir)
        rc, out, err, _ = rt.run([a.tsan_memviz] + cmd, cwd=case.dir, env=tenv)
        ref_rc, ref_out, _, _ = rt.run([a.memviz] + cmd, cwd=case.dir)
        what = " ".join(c if not c.startswith("/") else os.path.basename(c) for c in cmd)
        reports = tsan_reports(logdir, err)
        case.check("%s: no ThreadSanitizer report" % what, not reports,
                   "\n".join(t for _, t in reports)[:2000])
        case.check("%s: same exit status and output as the normal CLI" % what,
                   rc == ref_rc and out == ref_out, "exit %d vs %d" % (rc, ref_rc))
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tsan-agent", required=True)
    ap.add_argument("--gate", required=True)
    ap.add_argument("--libtsan", required=True)
    ap.add_argument("--control", required=True)
    ap.add_argument("--agent", required=True, help="the normal agent, for the reference runs")
    ap.add_argument("--memviz", required=True)
    ap.add_argument("--tsan-memviz", default=None, help="the CLI built with -fsanitize=thread")
    ap.add_argument("--programs", required=True)
    ap.add_argument("--suppressions", default=None)
    ap.add_argument("-k", dest="filter", default=None, help="only programs whose name contains this")
    ap.add_argument("--repeat", type=int, default=1, help="run each program this many times")
    ap.add_argument("--keep", action="store_true", help="keep work directories of passing cases")
    a = ap.parse_args()
    for attr in ("tsan_agent", "gate", "libtsan", "control", "agent", "memviz", "programs"):
        setattr(a, attr, os.path.abspath(getattr(a, attr)))
    if a.suppressions:
        a.suppressions = os.path.abspath(a.suppressions)
    missing = [f for f in (a.tsan_agent, a.gate, a.libtsan, a.control, a.agent, a.memviz) if not os.path.isfile(f)]
    if missing:
        print("run_tsan.py: missing: %s" % ", ".join(missing), file=sys.stderr)
        return 1
    env = Env(a)
    os.makedirs(os.path.join(REPO, "tests", "work"), exist_ok=True)
    workroot = os.path.join(REPO, "tests", "work", "tsan-%d" % os.getpid())
    os.makedirs(workroot)
    t0 = time.monotonic()
    cases = [lambda: run_control(a, env, workroot)]
    if a.tsan_memviz:
        a.tsan_memviz = os.path.abspath(a.tsan_memviz)
        cases.append(lambda: run_cli(a, env, workroot))
    for p in PROGRAMS:
        if a.filter and a.filter not in p.name:
            continue
        for i in range(a.repeat):
            cases.append(lambda p=p, i=i: run_case(a, env, workroot, p, i))
    kept = []
    for fn in cases:
        try:
            case = fn()
        except Exception as e:  # a harness problem must not hide the rest
            import traceback
            traceback.print_exc()
            rt.R.record("harness error", False, repr(e))
            continue
        if case.ok and not a.keep:
            shutil.rmtree(case.dir, ignore_errors=True)
        else:
            kept.append(case.dir)
    if not kept:
        shutil.rmtree(workroot, ignore_errors=True)
    print()
    print("tsan: %d passed, %d failed (%d runs, %.1f s)" % (rt.R.passed, len(rt.R.failed), len(cases),
                                                        time.monotonic() - t0))
    if rt.R.failed:
        print("failed checks:")
        for line in rt.R.failed:
            print("  " + line.splitlines()[0][:400])
    if kept:
        print("work directories kept: %s" % ", ".join(kept))
    return 1 if rt.R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
