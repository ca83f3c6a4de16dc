#!/usr/bin/env python3
"""memviz integration tests.

Runs the test programs of tests/programs under `memviz run`, then checks the
`memviz report --json` of every trace against numbers computed by hand from
the programs' sources (the reasoning is in comments next to each expectation,
and at the top of each program).

    python3 tests/integration/run_tests.py --memviz build/bin/memviz \
        --asan-memviz build/asan/memviz --programs build/tests/programs [-k SUBSTRING]

Each check prints one line, "PASS name: detail" or "FAIL name: detail" (with
expected and actual values), then a summary. Exit status 1 when anything
failed. Work directories live under tests/work/; those of passing cases are
removed, those of failing cases are kept (their paths are printed).

Cases (program in tests/programs/ -> what is checked):
  churn, churn-default-output, report-top   malloc/calloc/free, exact totals,
                                  stdio pass-through, default trace name, --top
  threads, threads-stress         8 threads, per-function exact, no lost events
  realloc, aligned                realloc family and aligned entry points, exact
  cxx, lifecycle                  operator new/delete variants, std::vector,
                                  bad_alloc; allocations before/after main
  forkexec, forkexec-no-follow,   child processes and their traces
  exec-only, posix-spawn, vfork-exec
  dlopen                          symbols of an unloaded plugin
  recursion, recursion-depth50, stacks, stacks-rounds, nofp
                                  deep / many / frame-pointer-less stacks
  segv, sigkill, exitpaths-*, threadexit, sighandler
                                  every way of ending; signal handlers
  fdchaos                         closefrom(3) and descriptor reuse
  demo                            runs and reports
  run-missing-program, bad-flag, bad-traces
                                  error handling (never a crash)
Every report is also produced by the ASan build and must be identical, and
the sums over sites must equal the summary.

Only the Python standard library is used.
"""

import argparse
import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

# Case modules (cases_*.py next to this file) `import run_tests` for the
# helpers below; they must get this very module, with its one Results.
sys.modules.setdefault("run_tests", sys.modules[__name__])

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_TIMEOUT = 120
REPORT_TIMEOUT = 120

# Names under which an allocator entry point may show up.
ENTRY_NAMES = {
    "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
    "memalign", "valloc", "pvalloc", "operator new", "operator new[]",
    "operator new(nothrow)", "operator new[](nothrow)", "operator new(align)",
    "operator new[](align)", "operator new(align, nothrow)", "operator new[](align, nothrow)",
}

SUMMARY_KEYS = ("allocations", "frees", "allocated_bytes", "peak_bytes", "leaked_bytes",
                "leaked_blocks", "temporary", "threads")


# ---------------------------------------------------------------------------
# Results


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def record(self, name, ok, detail=""):
        if ok and len(detail) > 200:  # failures keep every detail
            detail = detail[:200] + "..."
        line = "%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else "")
        print(line, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed.append(line)
        return ok


R = Results()


class Case:
    """One test case: a name, a work directory and its own pass/fail state."""

    def __init__(self, name, workroot):
        self.name = name
        self.dir = os.path.join(workroot, name)
        os.makedirs(self.dir, exist_ok=True)
        self.ok = True

    def check(self, what, ok, detail=""):
        if what.startswith(self.name + ": "):
            what = what[len(self.name) + 2:]
        ok = R.record("%s: %s" % (self.name, what), bool(ok), detail)
        self.ok = self.ok and ok
        return ok

    def eq(self, what, expected, actual):
        """expected: a value (exact), or a (lo, hi) tuple, either end None = open."""
        if isinstance(expected, tuple):
            lo, hi = expected
            ok = (isinstance(actual, (int, float)) and not isinstance(actual, bool)
                  and (lo is None or actual >= lo) and (hi is None or actual <= hi))
            exp_s = "in [%s, %s]" % ("-inf" if lo is None else lo, "inf" if hi is None else hi)
        else:
            ok = actual == expected
            exp_s = repr(expected)
        return self.check(what, ok, "expected %s, got %r" % (exp_s, actual))


# ---------------------------------------------------------------------------
# Running things


def _no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(cmd, cwd=None, stdin_data=None, timeout=RUN_TIMEOUT, env=None):
    """Runs cmd in its own session; returns (rc, stdout, stderr, seconds).
    rc is negative (-N) when the process died of signal N, None on timeout
    (then the whole process group is killed)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
                         preexec_fn=_no_core, start_new_session=True)
    try:
        out, err = p.communicate(stdin_data, timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        rc = None
    return rc, out, err, time.monotonic() - t0


def rc_str(rc):
    if rc is None:
        return "timeout"
    if rc < 0:
        try:
            return "signal %d (%s)" % (-rc, signal.Signals(-rc).name)
        except ValueError:
            return "signal %d" % -rc
    return "exit %d" % rc


def tail(b, n=600):
    s = b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)
    s = s.strip()
    return s if len(s) <= n else "..." + s[-n:]


def sanitizer_complaint(stderr):
    s = stderr.decode("utf-8", "replace")
    for marker in ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:"):
        if marker in s:
            return marker
    return None


class Env:
    def __init__(self, args):
        self.memviz = os.path.abspath(args.memviz)
        self.asan = os.path.abspath(args.asan_memviz) if args.asan_memviz else None
        self.progs = os.path.abspath(args.programs)

    def prog(self, name):
        return os.path.join(self.progs, name)


# ---------------------------------------------------------------------------
# Reports


def report_json(case, env, trace, label):
    """`memviz report --json TRACE` with the normal build, checked against the
    ASan build's output and the text report. Returns the parsed report or None."""
    rc, out, err, _ = run([env.memviz, "report", "--json", "--all-sites", trace],
                          timeout=REPORT_TIMEOUT)
    if not case.check("%s: report --json exits 0" % label, rc == 0,
                      "%s; stderr: %s" % (rc_str(rc), tail(err))):
        return None
    try:
        rep = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        case.check("%s: report --json is valid JSON" % label, False, "%s; output: %s" % (e, tail(out)))
        return None
    case.check("%s: report --json is valid JSON" % label, isinstance(rep, dict)
               and rep.get("memviz_report") == 1, "memviz_report = %r" % (
                   rep.get("memviz_report") if isinstance(rep, dict) else rep))
    if not isinstance(rep, dict):
        return None

    rc, tout, terr, _ = run([env.memviz, "report", trace], timeout=REPORT_TIMEOUT)
    case.check("%s: text report exits 0" % label, rc == 0 and len(tout) > 0,
               "%s, %d bytes of output; stderr: %s" % (rc_str(rc), len(tout), tail(terr)))

    if env.asan:
        rc, aout, aerr, _ = run([env.asan, "report", "--json", "--all-sites", trace],
                                timeout=REPORT_TIMEOUT)
        complaint = sanitizer_complaint(aerr)
        if case.check("%s: asan report --json exits 0, clean" % label, rc == 0 and not complaint,
                      "%s%s; stderr: %s" % (rc_str(rc), ", " + complaint if complaint else "",
                                            tail(aerr, 1500))):
            try:
                arep = json.loads(aout.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                arep = "invalid JSON: %s" % e
            case.check("%s: asan report --json identical" % label, arep == rep, first_diff(rep, arep))
        rc, atout, aterr, _ = run([env.asan, "report", trace], timeout=REPORT_TIMEOUT)
        complaint = sanitizer_complaint(aterr)
        case.check("%s: asan text report exits 0, clean, identical" % label,
                   rc == 0 and not complaint and atout == tout,
                   "%s%s, output %s; stderr: %s" % (
                       rc_str(rc), ", " + complaint if complaint else "",
                       "identical" if atout == tout else "differs", tail(aterr, 1500)))
    check_invariants(case, rep, label)
    check_run_summary(case, rep, trace, label)
    return rep


def fmt_bytes(v):
    """src/util/fmt.c's mvz_fmt_bytes."""
    if v < 1024:
        return "%d B" % v
    d, u = v / 1024.0, 0
    while d >= 1024 and u < 3:
        d, u = d / 1024.0, u + 1
    return "%.2f %s" % (d, ("KiB", "MiB", "GiB", "TiB")[u])


def fmt_duration(ns):
    """src/util/fmt.c's mvz_fmt_duration."""
    if ns >= 1000000000:
        return "%.3f s" % (ns / 1e9)
    if ns >= 1000000:
        return "%.1f ms" % (ns / 1e6)
    return "%.1f us" % (ns / 1e3)


RUN_LINE2 = re.compile(r"^memviz: ([0-9,]+) allocation calls, (.+) allocated, peak heap (.+) at (.+)$")
RUN_LINE3 = re.compile(r"^memviz: (.+) not freed (?:at exit|when the trace ends) in ([0-9,]+) "
                       r"block\(s\), ([0-9,]+) temporary "
                       r"allocations, peak RSS (.+?)(?: \(memviz's own: at most (.+) of it\))?$")
RUN_TRACE = re.compile(r"^memviz: trace written to (.+?)(?: \((\d+) child traces? listed in it\))?$")
RUN_LAST_IMAGE = re.compile(r"these numbers are from its last image: (.+)$")


def check_run_summary(case, rep, trace, label):
    """memviz run's closing summary, which the agent counted while it traced
    (no trace is read), says what the report computes from the trace it
    names."""
    mv = getattr(case, "last_run_summary", None)
    if not mv:
        return
    final = None
    for line in mv:
        m = RUN_LAST_IMAGE.search(line) or RUN_TRACE.match(line)
        if m:
            final = m.group(1)
    if final is None or os.path.realpath(os.path.join(case.dir, final)) != os.path.realpath(trace):
        return
    s = rep.get("summary") or {}
    want2 = [f"{s.get('allocations', 0):,}", fmt_bytes(s.get("allocated_bytes", 0)),
             fmt_bytes(s.get("peak_bytes", 0)), fmt_duration(s.get("peak_time_ns", 0))]
    want3 = [fmt_bytes(s.get("leaked_bytes", 0)), f"{s.get('leaked_blocks', 0):,}",
             f"{s.get('temporary', 0):,}", fmt_bytes(s.get("peak_rss_bytes", 0)),
             fmt_bytes(s["peak_rss_agent_bytes"]) if s.get("peak_rss_agent_bytes") else None]
    got2 = next((list(m.groups()) for m in map(RUN_LINE2.match, mv) if m), None)
    got3 = next((list(m.groups()) for m in map(RUN_LINE3.match, mv) if m), None)
    case.eq("%s: memviz run's summary (calls, bytes, peak, when) == the report's" % label,
            want2, got2)
    case.eq("%s: memviz run's summary (leaked, blocks, temporary, RSS, memviz's share) == the "
            "report's" % label,
            want3, got3)
    dur = "after " + fmt_duration(s.get("duration_ns", 0))
    case.check("%s: memviz run's duration == the report's" % label,
               any(line.endswith(dur) for line in mv), "want %r in %r" % (dur, mv[:1]))
    if not any(RUN_LAST_IMAGE.search(line) for line in mv):
        said = next((int(m.group(2) or 0) for m in map(RUN_TRACE.match, mv) if m), None)
        case.eq("%s: memviz run's count of child traces == the report's" % label,
                len(rep.get("children") or []), said)


def first_diff(a, b, path="$"):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s present in only one" % (path, k)
            d = first_diff(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return ""
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: length %d vs %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return ""
    return "" if a == b else "%s: %r vs %r" % (path, a, b)


def sites_of(rep):
    s = rep.get("sites")
    return s if isinstance(s, list) else []


def check_invariants(case, rep, label):
    """Properties every report has, whatever the program."""
    summ = rep.get("summary") or {}
    sites = sites_of(rep)
    missing = [k for k in SUMMARY_KEYS + ("peak_time_ns", "peak_rss_bytes", "duration_ns")
               if not isinstance(summ.get(k), int)]
    case.check("%s: summary has all fields" % label, not missing, "missing/non-integer: %s" % missing)
    if missing:
        return
    # Sums over sites equal the summary (the JSON lists every site).
    for key in ("allocations", "allocated_bytes", "leaked_bytes", "leaked_blocks", "temporary"):
        total = sum(s.get(key, 0) for s in sites)
        case.eq("%s: sum of sites' %s == summary.%s" % (label, key, key), summ[key], total)
    case.eq("%s: sum of sites' at_peak_bytes == summary.peak_bytes" % label, summ["peak_bytes"],
            sum(s.get("at_peak_bytes", 0) for s in sites))
    bad = []
    for i, s in enumerate(sites):
        fr = s.get("frames") or []
        ent = s.get("entries") or {}
        probs = []
        if not fr:
            probs.append("no frames")
        if sum(ent.values()) != s.get("allocations"):
            probs.append("entries %r do not add up to allocations %r" % (ent, s.get("allocations")))
        if set(ent) - ENTRY_NAMES:
            probs.append("unknown entry names %s" % sorted(set(ent) - ENTRY_NAMES))
        if not (0 <= s.get("at_peak_bytes", -1) <= s.get("peak_bytes", -1) <= s.get("allocated_bytes", -1)):
            probs.append("not 0 <= at_peak %r <= peak %r <= allocated %r" % (
                s.get("at_peak_bytes"), s.get("peak_bytes"), s.get("allocated_bytes")))
        if not (0 <= s.get("leaked_bytes", -1) <= s.get("peak_bytes", -1)):
            probs.append("leaked %r > peak %r" % (s.get("leaked_bytes"), s.get("peak_bytes")))
        if not (0 <= s.get("leaked_blocks", -1) <= s.get("allocations", -1)):
            probs.append("leaked_blocks %r > allocations %r" % (s.get("leaked_blocks"), s.get("allocations")))
        if not (0 <= s.get("temporary", -1) <= s.get("allocations", -1)):
            probs.append("temporary %r > allocations %r" % (s.get("temporary"), s.get("allocations")))
        for f in fr:
            mod = f.get("module") or ""
            if mod.endswith("libmemviz.so") or str(f.get("function", "")).startswith("mvz_"):
                probs.append("agent frame %r" % f)
                break
        if probs:
            bad.append("site %d (%s): %s" % (i, fr[0].get("function") if fr else "?", "; ".join(probs)))
    case.check("%s: every site is consistent (entries, peaks, leaks, no agent frames)" % label,
               not bad, "; ".join(bad[:5]) + (" ..." if len(bad) > 5 else ""))
    case.check("%s: leaked <= peak <= allocated bytes, temporary <= allocations" % label,
               summ["leaked_bytes"] <= summ["peak_bytes"] <= summ["allocated_bytes"]
               and summ["temporary"] <= summ["allocations"],
               "leaked %d, peak %d, allocated %d, temporary %d, allocations %d, frees %d" % (
                   summ["leaked_bytes"], summ["peak_bytes"], summ["allocated_bytes"],
                   summ["temporary"], summ["allocations"], summ["frees"]))
    # A trace written by a healthy run has no damage: nothing lost, missing,
    # out of order, or released twice.
    damage = rep.get("damage") or {}
    bad_damage = {k: v for k, v in damage.items() if v not in (0, False)}
    case.check("%s: no damage (lost, missing, unordered events, reused addresses)" % label,
               isinstance(rep.get("damage"), dict) and not bad_damage, "damage: %r" % bad_damage)
    # (a process that allocated nothing may report 0 threads)
    case.check("%s: 0 <= peak_time_ns <= duration_ns, threads >= 1 if it allocated" % label,
               0 <= summ["peak_time_ns"] <= summ["duration_ns"]
               and (summ["threads"] >= 1 or summ["allocations"] == 0),
               "peak_time_ns %d, duration_ns %d, threads %d" % (
                   summ["peak_time_ns"], summ["duration_ns"], summ["threads"]))


# ---------------------------------------------------------------------------
# Per-function expectations


def base_name(fn):
    """'ns::f(int)' -> 'f'; 'std::__new_allocator<int>::allocate(unsigned long, void const*)'
    -> 'allocate'; 'churn_small' -> 'churn_small'."""
    s = (fn or "").strip()
    for suffix in (" const", " volatile", " &&", " &"):
        if s.endswith(suffix):
            s = s[: -len(suffix)]
    for open_c, close_c in (("(", ")"), ("<", ">")):
        if s.endswith(close_c):
            depth = 0
            for i in range(len(s) - 1, -1, -1):
                if s[i] == close_c:
                    depth += 1
                elif s[i] == open_c:
                    depth -= 1
                    if depth == 0:
                        if i > 0:
                            s = s[:i]
                        break
    # last '::' component outside <...> and (...)
    depth = 0
    cut = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif depth == 0 and s.startswith("::", i):
            cut = i + 2
            i += 1
        i += 1
    return s[cut:]


def frame_names(site):
    return [base_name(f.get("function")) for f in site.get("frames") or []]


def select_sites(rep, func, match="top"):
    out = []
    for s in sites_of(rep):
        names = frame_names(s)
        if not names:
            continue
        if (match == "top" and names[0] == func) or (match == "any" and func in names):
            out.append(s)
    return out


def check_functions(case, rep, label, funcs):
    """funcs: {function: spec}. spec keys: the site fields to sum over the sites
    of the function (allocations, allocated_bytes, leaked_bytes, leaked_blocks,
    temporary, peak_bytes, at_peak_bytes; int = exact, (lo, hi) = range), entries
    (the summed entries map), match ("top": frames[0] is the function (default);
    "any": any frame is), file / module (suffixes frames[0] must have)."""
    for func, spec in funcs.items():
        match = spec.get("match", "top")
        sites = select_sites(rep, func, match)
        what = "%s: %s" % (label, func)
        if spec.get("allocations") == 0:
            case.check("%s has no allocation sites" % what, not sites,
                       "found %d site(s) with %d allocations" % (
                           len(sites), sum(s.get("allocations", 0) for s in sites)))
            continue
        if not case.check("%s has allocation sites" % what, sites,
                          "%d site(s) with %s %s; functions seen at frames[0]: %s" % (
                              len(sites), "frames[0] =" if match == "top" else "a frame", func,
                              sorted({frame_names(s)[0] for s in sites_of(rep) if frame_names(s)}))):
            continue
        for key in ("allocations", "allocated_bytes", "leaked_bytes", "leaked_blocks", "temporary",
                    "peak_bytes", "at_peak_bytes"):
            if key in spec:
                case.eq("%s %s" % (what, key), spec[key], sum(s.get(key, 0) for s in sites))
        if "entries" in spec:
            ent = {}
            for s in sites:
                for k, v in (s.get("entries") or {}).items():
                    ent[k] = ent.get(k, 0) + v
            case.eq("%s entries" % what, spec["entries"], ent)
        if match == "top":
            probs = []
            for s in sites:
                f0 = s["frames"][0]
                if spec.get("file") and not str(f0.get("file") or "").endswith(spec["file"]):
                    probs.append("file %r" % f0.get("file"))
                if spec.get("file") and not (isinstance(f0.get("line"), int) and f0["line"] > 0):
                    probs.append("line %r" % f0.get("line"))
                if spec.get("module") and not str(f0.get("module") or "").endswith(spec["module"]):
                    probs.append("module %r" % f0.get("module"))
            if spec.get("file") or spec.get("module"):
                case.check("%s frames[0] is in %s (%s) with a line" % (
                    what, spec.get("file"), spec.get("module")), not probs, "; ".join(sorted(set(probs))))
        if spec.get("caller"):
            callers = {tuple(frame_names(s)[1:1 + len(spec["caller"])]) for s in sites}
            case.eq("%s called from" % what, {tuple(spec["caller"])}, callers)


def check_summary(case, rep, label, spec):
    summ = rep.get("summary") or {}
    for key, exp in spec.items():
        case.eq("%s: summary.%s" % (label, key), exp, summ.get(key))


def check_process(case, rep, label, exe=None, argv=None, status=None, sig=None, how=None):
    proc = rep.get("process") or {}
    if exe:
        case.check("%s: process.exe ends with /%s" % (label, exe),
                   str(proc.get("exe", "")).endswith("/" + exe), "exe = %r" % proc.get("exe"))
    if argv is not None:
        case.eq("%s: process.argv" % label, argv, proc.get("argv"))
    if status is not None:
        case.eq("%s: process.exit_status" % label, status, proc.get("exit_status"))
        case.check("%s: no process.exit_signal" % label, "exit_signal" not in proc,
                   "exit_signal = %r" % proc.get("exit_signal"))
    if sig is not None:
        case.eq("%s: process.exit_signal" % label, sig, proc.get("exit_signal"))
        case.check("%s: no process.exit_status" % label, "exit_status" not in proc,
                   "exit_status = %r" % proc.get("exit_status"))
    if how is not None:
        case.eq("%s: process.exit_how" % label, how, proc.get("exit_how"))
    for k in ("pid", "ppid"):
        case.check("%s: process.%s is a positive integer" % (label, k),
                   isinstance(proc.get(k), int) and proc[k] > 0, "%s = %r" % (k, proc.get(k)))


# ---------------------------------------------------------------------------
# Running a program under memviz


def split_stderr(err):
    """(memviz lines, program lines) of memviz run's stderr."""
    mv, prog = [], []
    for line in err.decode("utf-8", "replace").splitlines():
        (mv if line.startswith("memviz:") else prog).append(line)
    return mv, prog


def memviz_run(case, env, prog, args=(), opts=(), stdin_data=None, exit_code=0, stdout=None,
               stderr_lines=(), trace_name=None, expect_files=None):
    """Runs `memviz run -o DIR/NAME.mvz OPTS -- PROG ARGS` in the case's
    directory and checks exit code, pass-through of the program's output and the
    trace file. Returns the trace path (or None)."""
    trace = os.path.join(case.dir, (trace_name or prog) + ".mvz")
    cmd = [env.memviz, "run", "-o", trace] + list(opts) + ["--", env.prog(prog)] + list(args)
    rc, out, err, secs = run(cmd, cwd=case.dir, stdin_data=stdin_data)
    case.eq("run exit code", exit_code, rc)
    if rc is None or (rc is not None and rc < 0):
        case.check("memviz run itself did not crash/hang", False, rc_str(rc) + "; stderr: " + tail(err))
    if stdout is not None:
        case.eq("program stdout passes through", stdout, out)
    mv, prog_err = split_stderr(err)
    case.last_run_summary = mv
    if callable(stderr_lines):
        case.check("program stderr passes through", stderr_lines(prog_err), repr(prog_err))
    else:
        case.eq("program stderr passes through", list(stderr_lines), prog_err)
    case.check("memviz prints a summary on stderr", mv, "stderr: " + tail(err))
    case.check("trace file written", os.path.isfile(trace) and os.path.getsize(trace) > 0, trace)
    if expect_files is not None:
        files = sorted(f for f in os.listdir(case.dir))
        case.eq("files in the output directory", sorted(expect_files), files)
    return trace if os.path.isfile(trace) else None


def simple_case(env, workroot, name, prog, args=(), opts=(), stdin_data=None, exit_code=0,
                stdout=None, stderr_lines=(), process=None, summary=None, funcs=None, extra=None,
                other_files=()):
    case = Case(name, workroot)
    trace = memviz_run(case, env, prog, args, opts, stdin_data, exit_code, stdout, stderr_lines,
                       expect_files=[prog + ".mvz"] + list(other_files))
    if trace:
        rep = report_json(case, env, trace, prog)
        if rep is not None:
            if process is not None:
                check_process(case, rep, prog, **process)
            if summary:
                check_summary(case, rep, prog, summary)
            if funcs:
                check_functions(case, rep, prog, funcs)
            if extra:
                extra(case, rep)
    return case


# ---------------------------------------------------------------------------
# Expectations, program by program. The numbers are derived in the comments
# here and at the top of each program's source.

# churn.c - single-threaded, no stdio, so the totals are exact.
CHURN_FUNCS = {
    # 1000 x malloc(64), each freed before the next: 64,000 bytes, all temporary,
    # never more than 64 live, nothing live at the global peak.
    "temp_loop": dict(allocations=1000, allocated_bytes=64000, leaked_bytes=0, leaked_blocks=0,
                      temporary=1000, peak_bytes=64, at_peak_bytes=0, entries={"malloc": 1000},
                      file="churn.c", module="/churn", caller=["main"]),
    # 7 x malloc(123), never freed: 861 bytes, live from the start to the end.
    "leak_some": dict(allocations=7, allocated_bytes=861, leaked_bytes=861, leaked_blocks=7,
                      temporary=0, peak_bytes=861, at_peak_bytes=861, entries={"malloc": 7},
                      file="churn.c", module="/churn", caller=["main"]),
    # 100 x malloc(1000), all live at the peak, all freed by free_array; none is
    # temporary (each is followed by the next allocation; the last by calloc_blocks).
    "build_array": dict(allocations=100, allocated_bytes=100000, leaked_bytes=0, leaked_blocks=0,
                        temporary=0, peak_bytes=100000, at_peak_bytes=100000,
                        entries={"malloc": 100}, file="churn.c", module="/churn", caller=["main"]),
    # 50 x calloc(10, 20) = 200 bytes each = 10,000; the peak is reached at the last
    # one; free_calloc frees 30 (allocated before others): 20 x 200 = 4,000 leaked.
    "calloc_blocks": dict(allocations=50, allocated_bytes=10000, leaked_bytes=4000, leaked_blocks=20,
                          temporary=0, peak_bytes=10000, at_peak_bytes=10000,
                          entries={"calloc": 50}, file="churn.c", module="/churn", caller=["main"]),
    # malloc(50000) freed at once; 4,861 + 50,000 = 54,861 < the peak.
    "big_temp": dict(allocations=1, allocated_bytes=50000, leaked_bytes=0, leaked_blocks=0,
                     temporary=1, peak_bytes=50000, at_peak_bytes=0, entries={"malloc": 1},
                     file="churn.c", module="/churn", caller=["main"]),
    # These allocate nothing (free only / mmap).
    "free_array": dict(allocations=0),
    "free_calloc": dict(allocations=0),
    "rss_touch": dict(allocations=0),
    "main": dict(allocations=0),
}
CHURN_SUMMARY = {
    "allocations": 1158,          # 1000 + 7 + 100 + 50 + 1
    "frees": 1131,                # 1000 + 100 + 30 + 1
    "allocated_bytes": 224861,    # 64,000 + 861 + 100,000 + 10,000 + 50,000
    "peak_bytes": 110861,         # 861 + 100,000 + 10,000 after the last calloc
    "leaked_bytes": 4861,         # 7 x 123 + 20 x 200
    "leaked_blocks": 27,          # 7 + 20
    "temporary": 1001,            # temp_loop 1000 + big_temp 1
    "threads": 1,
    "peak_rss_bytes": (16 << 20, None),  # rss_touch keeps 16 MiB resident for 250 ms
    "duration_ns": (250 * 10**6, None),  # rss_touch sleeps 250 ms
}


def churn_extra(case, rep):
    summ = rep.get("summary") or {}
    if isinstance(summ.get("peak_time_ns"), int) and isinstance(summ.get("duration_ns"), int):
        # The peak (last calloc) comes before rss_touch's 250 ms sleep.
        case.check("churn: peak_time_ns is before the final 250 ms sleep",
                   summ["peak_time_ns"] <= summ["duration_ns"] - 200 * 10**6,
                   "peak_time_ns %d, duration_ns %d" % (summ["peak_time_ns"], summ["duration_ns"]))


def case_churn(env, workroot):
    return simple_case(
        env, workroot, "churn", "churn", args=["--echo-stdin"], stdin_data=b"hello memviz\n",
        stdout=b"stdin: hello memviz\nchurn: done\n", stderr_lines=["churn: stderr check"],
        process=dict(exe="churn", argv=[env.prog("churn"), "--echo-stdin"], status=0, how="return"),
        summary=CHURN_SUMMARY, funcs=CHURN_FUNCS, extra=churn_extra)


def case_churn_default_output(env, workroot):
    """Without -o the trace is memviz.churn.PID.mvz in the current directory."""
    case = Case("churn-default-output", workroot)
    rc, out, err, _ = run([env.memviz, "run", "--", env.prog("churn")], cwd=case.dir)
    case.eq("run exit code", 0, rc)
    case.eq("program stdout passes through", b"churn: done\n", out)
    files = os.listdir(case.dir)
    traces = [f for f in files if f.startswith("memviz.churn.") and f.endswith(".mvz")]
    if case.check("one trace memviz.churn.PID.mvz in the current directory",
                  len(traces) == 1 and len(files) == 1, "files: %s" % sorted(files)):
        pid = traces[0][len("memviz.churn."):-len(".mvz")]
        case.check("trace name carries a pid", pid.isdigit(), traces[0])
        rep = report_json(case, env, os.path.join(case.dir, traces[0]), "churn")
        if rep is not None and pid.isdigit():
            case.eq("churn: process.pid matches the file name", int(pid), (rep.get("process") or {}).get("pid"))
            case.eq("churn: summary.allocations", 1158, (rep.get("summary") or {}).get("allocations"))
    return case


def case_run_summary_no_replay(env, workroot):
    """memviz run prints its summary from what the agents counted while they
    traced, and reads no trace to do it: under strace, memviz run's own
    process opens no .mvz file for reading. The program closes every
    descriptor it did not open, the agent's page one among them, and then
    execs churn, whose agent finds the page again through memviz run's
    /proc. The summary (checked against churn's report) is churn's."""
    case = Case("run-summary-no-replay", workroot)
    trace = os.path.join(case.dir, "closer.mvz")
    log = os.path.join(case.dir, "strace.log")
    code = ("import os, sys; os.closerange(3, 1 << 16); "
            "os.execv(sys.argv[1], [sys.argv[1]])")
    cmd = ["strace", "-f", "-qq", "-e", "trace=openat", "-o", log, env.memviz, "run", "-o", trace,
           "--", sys.executable, "-c", code, env.prog("churn")]
    rc, out, err, _ = run(cmd, cwd=case.dir)
    case.eq("run exit code", 0, rc)
    case.eq("program stdout passes through", b"churn: done\n", out)
    mv, _ = split_stderr(err)
    case.last_run_summary = mv
    final = next((m.group(1) for m in map(RUN_LAST_IMAGE.search, mv) if m), None)
    if not case.check("the summary names churn's image, started by exec", final, repr(mv)):
        return case
    lines = open(log, encoding="utf-8", errors="replace").read().splitlines()
    top = lines[0].split()[0] if lines else None
    reads = [ln for ln in lines if ln.split()[0] == top and ".mvz" in ln and "O_RDONLY" in ln]
    case.eq("memviz run opened no trace for reading", [], reads)
    via_proc = [ln for ln in lines if "/proc/%s/fd/" % top in ln and "= -1" not in ln]
    case.check("the exec'd image found the page through memviz run's /proc", via_proc,
               "no such openat in %d lines" % len(lines))
    rep = report_json(case, env, final, "churn")
    if rep is not None:
        check_summary(case, rep, "churn", CHURN_SUMMARY)
    return case


def case_churn_nodebug(env, workroot):
    """churn built without -g: function names must still come from the ELF
    symbol table; there is no file or line to show."""
    funcs = {}
    for name, spec in CHURN_FUNCS.items():
        spec = dict(spec)
        spec.pop("file", None)
        spec["module"] = "/churn_nodebug"
        funcs[name] = spec
    case = simple_case(env, workroot, "churn-nodebug", "churn_nodebug", summary=CHURN_SUMMARY,
                       funcs=funcs, stdout=b"churn: done\n", stderr_lines=["churn: stderr check"])
    return case


# Programs whose every stack is unwound twice under MEMVIZ_UNWIND_CHECK=1: by
# the agent's own CFI unwinder and by libunwind; the agent reports any
# difference on stderr.
UNWIND_CHECK_PROGRAMS = [("nofp", []), ("cxx", []), ("recursion", []), ("threads", []),
                         ("dlopen", []), ("sighandler", []), ("stacks", []), ("lifecycle", []),
                         ("churn", []), ("exitpaths", ["exit"]),
                         ("bigframe", []), ("sites", [])]


def case_unwind_check(env, workroot):
    case = Case("unwind-check", workroot)
    environ = dict(os.environ, MEMVIZ_UNWIND_CHECK="1")
    for prog, args in UNWIND_CHECK_PROGRAMS:
        trace = os.path.join(case.dir, prog + ".mvz")
        cmd = [env.memviz, "run", "-o", trace, "--", env.prog(prog)] + args
        rc, out, err, secs = run(cmd, cwd=case.dir, env=environ)
        text = err.decode("utf-8", "replace")
        case.check("%s: exits normally" % prog, rc is not None and rc >= 0, rc_str(rc))
        case.check("%s: fast unwinder agrees with libunwind on every stack" % prog,
                   "unwinder mismatch" not in text,
                   "; ".join(l for l in text.splitlines() if "mismatch" in l))
    return case


def case_libunwind_only(env, workroot):
    """MEMVIZ_UNWIND=libunwind: the general unwinder alone gives the same
    per-function numbers and call chains."""
    case = Case("libunwind-only", workroot)
    trace = os.path.join(case.dir, "nofp.mvz")
    cmd = [env.memviz, "run", "-o", trace, "--", env.prog("nofp")]
    rc, out, err, secs = run(cmd, cwd=case.dir, env=dict(os.environ, MEMVIZ_UNWIND="libunwind"))
    case.eq("run exit code", 0, rc)
    rep = report_json(case, env, trace, "nofp") if os.path.isfile(trace) else None
    if rep is not None:
        check_summary(case, rep, "nofp", NOFP_SUMMARY)
        nofp_extra(case, rep)
    return case


def case_sigdispo(env, workroot):
    """The agent's crash handlers are invisible: every disposition reads as
    the default, and the program's own SIGSEGV handler replaces ours."""
    return simple_case(env, workroot, "sigdispo", "sigdispo", stdout=b"sigdispo: ok\n",
                       process=dict(exe="sigdispo", status=0, how="return"),
                       summary={"allocations": 1, "frees": 1, "leaked_bytes": 0})


EARLY_FUNCS = {
    # In libmvzearly.so's constructor, before main: 4321 bytes kept, 55 freed at once.
    "early_ctor_alloc": dict(allocations=1, allocated_bytes=4321, leaked_bytes=4321, leaked_blocks=1,
                             temporary=0, entries={"malloc": 1}, file="mvzearly.c",
                             module="/libmvzearly.so", caller=["mvzearly_init"]),
    "early_ctor_temp": dict(allocations=1, allocated_bytes=55, leaked_bytes=0, leaked_blocks=0,
                            temporary=1, entries={"malloc": 1}, file="mvzearly.c",
                            module="/libmvzearly.so", caller=["mvzearly_init"]),
}


def case_early(env, workroot):
    """Allocations by a library constructor, before main (and maybe before the
    agent's own constructor) are traced with their stacks."""
    return simple_case(env, workroot, "early", "early", stdout=b"early: ok\n",
                       process=dict(exe="early", status=0, how="return"), funcs=EARLY_FUNCS)


DOUBLEFREE_FUNCS = {
    "keep_some": dict(allocations=3, allocated_bytes=900, leaked_bytes=900, leaked_blocks=3,
                      entries={"malloc": 3}, file="doublefree.c", caller=["main"]),
    "victim": dict(allocations=1, allocated_bytes=2000, leaked_bytes=0, leaked_blocks=0,
                   entries={"malloc": 1}, file="doublefree.c", caller=["main"]),
}


def case_doublefree(env, workroot):
    """glibc aborts on a double free with its arena locked: the program must
    still die of SIGABRT promptly (no hang in the agent) with a readable
    trace; the second free is a release of a block no longer live."""
    return simple_case(env, workroot, "doublefree", "doublefree", exit_code=128 + 6,
                       stdout=b"doublefree: freeing twice\n",
                       # glibc's words depend on the heap layout
                       stderr_lines=lambda lines: len(lines) == 1 and lines[0].startswith(
                           "double free or corruption"),
                       process=dict(exe="doublefree", sig=6, how="signal"),
                       summary={"allocations": 5, "frees": 1, "unmatched_frees": 1},
                       funcs=DOUBLEFREE_FUNCS)


def case_execfail(env, workroot):
    """A failed exec flushes the trace but must not end it."""
    return simple_case(env, workroot, "execfail", "execfail", stdout=b"execfail: went on\n",
                       process=dict(exe="execfail", status=0, how="return"),
                       summary={"allocations": 1100, "frees": 1000, "allocated_bytes": 82000,
                                "peak_bytes": 50000, "leaked_bytes": 50000, "leaked_blocks": 100,
                                "temporary": 1000})


def case_threadchurn(env, workroot):
    """3,000 short-lived threads: every allocation counted, and the agent's
    per-thread memory released with each thread (the program checks its own
    RSS)."""
    funcs = {"churn_in_thread": dict(allocations=30000, allocated_bytes=3000000, leaked_bytes=0,
                                     leaked_blocks=0, temporary=30000, entries={"malloc": 30000},
                                     file="threadchurn.c", caller=["thread_main"])}
    return simple_case(env, workroot, "threadchurn", "threadchurn",
                       process=dict(exe="threadchurn", status=0, how="return"),
                       summary={"threads": (3001, 3001)}, funcs=funcs)


@contextlib.contextmanager
def agent_env(name, value):
    """Runs the body with the environment variable `name` set to `value`
    (read by the agent of every program run meanwhile), then restores it."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


def case_no_tsc(env, workroot):
    """Without an invariant time-stamp counter, order keys come from a
    global counter: the threaded, forking and exec'ing programs must give
    the same numbers that way (MEMVIZ_CLOCK=monotonic forces it)."""
    with agent_env("MEMVIZ_CLOCK", "monotonic"):
        cases = [case_threads(env, os.path.join(workroot, "no-tsc")),
                 case_forkexec(env, os.path.join(workroot, "no-tsc")),
                 case_realloc(env, os.path.join(workroot, "no-tsc"))]
    case = Case("no-tsc", workroot)
    case.check("threads, forkexec and realloc pass with counter keys",
               all(c.ok for c in cases), "see their checks above")
    return case


def case_stack_ids_writer(env, workroot):
    """Threads with many stacks hand them to the writer as frame records
    (stacks.c); MEMVIZ_STACK_IDS=writer makes every thread do so from its
    first stack. The programs must give their exact numbers that way too:
    threads, fork and exec, dlopen with an unload between captures and
    lookups, C++, the deep and varied stacks, frames of 20,000 bytes."""
    with agent_env("MEMVIZ_STACK_IDS", "writer"):
        root = os.path.join(workroot, "stack-ids-writer")
        cases = [case_threads(env, root), case_forkexec(env, root), case_dlopen(env, root),
                 case_cxx(env, root), case_stacks_rounds(env, root), case_bigframe(env, root),
                 case_realloc(env, root)]
    case = Case("stack-ids-writer", workroot)
    case.check("the programs pass with every stack looked up by the writer",
               all(c.ok for c in cases), "see their checks above")
    return case


def case_groups(env, workroot):
    """The collector writes the events of one time unit of several threads
    thread by thread (GROUPs) or as they came, deciding as it goes; each way
    on its own, forced with MEMVIZ_GROUPS, the threaded programs must give
    their exact numbers (8 threads at once: every temporary, every block)."""
    cases = []
    for mode in ("always", "never"):
        with agent_env("MEMVIZ_GROUPS", mode):
            root = os.path.join(workroot, "groups-" + mode)
            cases += [case_threads(env, root), case_threads_stress(env, root)]
    case = Case("groups", workroot)
    case.check("threads and threads-stress pass with MEMVIZ_GROUPS=always and =never",
               all(c.ok for c in cases), "see their checks above")
    return case


def case_report_top(env, workroot):
    """report --top N limits the text report's site lists. (The JSON lists every
    site - the sums over sites must equal the summary - so --top is not checked
    there.)"""
    case = Case("report-top", workroot)
    trace = memviz_run(case, env, "churn", stdout=b"churn: done\n", stderr_lines=["churn: stderr check"])
    if trace:
        outs = {}
        for n in ("1", "100"):
            rc, out, err, _ = run([env.memviz, "report", "--top", n, trace])
            case.eq("report --top %s exit code" % n, 0, rc)
            outs[n] = out.decode("utf-8", "replace")
        # churn has 5 sites: with --top 1 each list shows one of them, with
        # --top 100 all five; build_array leads the peak and allocated-bytes lists.
        case.check("report --top 1 is shorter than --top 100",
                   len(outs["1"].splitlines()) < len(outs["100"].splitlines()),
                   "%d vs %d lines" % (len(outs["1"].splitlines()), len(outs["100"].splitlines())))
        case.check("report --top 1 names build_array (the largest contributor to the peak)",
                   "build_array" in outs["1"], tail(outs["1"], 300))
        case.check("report --top 100 names all five allocating functions",
                   all(f in outs["100"] for f in ("temp_loop", "leak_some", "build_array", "calloc_blocks",
                                                   "big_temp")), tail(outs["100"], 300))
        rc, out, err, _ = run([env.memviz, "report", "--top", "abc", trace])
        case.eq("report --top abc (usage error) exit code", 2, rc)
    return case


# threads.c - pthread_create allocates the DTV of each thread inside glibc
# (heaptrack: 8 calloc calls, 1,280 bytes); per-function numbers are exact.
THREADS_FUNCS = {
    # 8 threads x 100 x malloc(48) freed at once: 800 allocations, 38,400 bytes,
    # all temporary. Site peak: between 48 (no overlap) and 8 x 48 = 384.
    "thread_churn": dict(allocations=800, allocated_bytes=38400, leaked_bytes=0, leaked_blocks=0,
                         temporary=800, peak_bytes=(48, 384), entries={"malloc": 800},
                         file="threads.c", module="/threads", caller=["thread_main"]),
    # thread k leaks 5 x malloc(100 (k + 1)): 5 x 100 x 36 = 18,000 bytes in 40 blocks.
    "thread_leak": dict(allocations=40, allocated_bytes=18000, leaked_bytes=18000, leaked_blocks=40,
                        temporary=0, peak_bytes=18000, entries={"malloc": 40},
                        file="threads.c", module="/threads", caller=["thread_main"]),
}
THREADS_SUMMARY = {
    # main + 8 workers; the agent's writer thread must never appear.
    "threads": 9,
    "allocations": (840, 840 + 100),              # 800 + 40 + glibc's few
    "allocated_bytes": (56400, 56400 + 65536),    # 38,400 + 18,000 + glibc's
    "leaked_bytes": (18000, 18000 + 65536),
    "leaked_blocks": (40, 40 + 50),
    "temporary": (800, 800 + 50),
    "peak_bytes": (18000, 18000 + 384 + 65536),   # all leaks live at the end
}


def case_threads(env, workroot):
    return simple_case(env, workroot, "threads", "threads", stdout=b"threads: done\n",
                       process=dict(exe="threads", argv=[env.prog("threads")], status=0, how="return"),
                       summary=THREADS_SUMMARY, funcs=THREADS_FUNCS)


STRESS_N = 20000


def case_threads_stress(env, workroot):
    """threads with 20,000 churn iterations per thread: 160,000 temporaries from
    8 threads at once; no event may be lost."""
    n = 8 * STRESS_N
    funcs = dict(THREADS_FUNCS)
    funcs["thread_churn"] = dict(THREADS_FUNCS["thread_churn"], allocations=n, allocated_bytes=48 * n,
                                 temporary=n, entries={"malloc": n})
    summary = dict(THREADS_SUMMARY, allocations=(n + 40, n + 40 + 100),
                   allocated_bytes=(48 * n + 18000, 48 * n + 18000 + 65536), temporary=(n, n + 50))
    return simple_case(env, workroot, "threads-stress", "threads", args=[str(STRESS_N)],
                       stdout=b"threads: done\n", process=dict(exe="threads", status=0, how="return"),
                       summary=summary, funcs=funcs)


# realloc.c - single-threaded, no stdio: exact totals. A moving realloc is an
# allocation of the new block plus a free of the old one; whether memviz puts
# the allocation or the free first decides the site peak of grow_buffer and
# whether the old blocks count as temporary, so those are ranges / unchecked.
REALLOC_FUNCS = {
    # realloc(NULL, 16), then 32, 64, ..., 4096: 9 allocations, 16 x 511 = 8,176
    # bytes, all freed (the last by shrink_buffer's realloc). Site peak 4,096, or
    # 2,048 + 4,096 if both blocks are counted live during the move.
    "grow_buffer": dict(allocations=9, allocated_bytes=8176, leaked_bytes=0, leaked_blocks=0,
                        peak_bytes=(4096, 6144), at_peak_bytes=0, entries={"realloc": 9},
                        file="realloc.c", module="/realloc"),
    # realloc(p, 100): 100 bytes, freed by realloc(p, 0); live at the peak.
    "shrink_buffer": dict(allocations=1, allocated_bytes=100, leaked_bytes=0, leaked_blocks=0,
                          temporary=0, peak_bytes=100, at_peak_bytes=100, entries={"realloc": 1},
                          file="realloc.c", module="/realloc"),
    # malloc(50) then realloc(.., 500): 550 bytes, the 500 leaks.
    "realloc_leak": dict(allocations=2, allocated_bytes=550, leaked_bytes=500, leaked_blocks=1,
                         at_peak_bytes=500, entries={"malloc": 1, "realloc": 1},
                         file="realloc.c", module="/realloc"),
    # reallocarray(NULL, 10, 8) = 80, reallocarray(.., 20, 8) = 160 (leaks).
    "reallocarray_site": dict(allocations=2, allocated_bytes=240, leaked_bytes=160, leaked_blocks=1,
                              at_peak_bytes=160, entries={"reallocarray": 2},
                              file="realloc.c", module="/realloc"),
    # malloc(0) succeeds (a unique pointer): an allocation of 0 bytes, temporary.
    "zero_malloc": dict(allocations=1, allocated_bytes=0, leaked_bytes=0, leaked_blocks=0,
                        temporary=1, peak_bytes=0, at_peak_bytes=0, entries={"malloc": 1},
                        file="realloc.c", module="/realloc"),
    # realloc(NULL, 0) = malloc(0) on glibc: an allocation of 0 bytes, temporary.
    "realloc_null_zero": dict(allocations=1, allocated_bytes=0, leaked_bytes=0, leaked_blocks=0,
                              temporary=1, peak_bytes=0, at_peak_bytes=0, entries={"realloc": 1},
                              file="realloc.c", module="/realloc"),
    # malloc(64); failed realloc, malloc, calloc and reallocarray are not
    # allocations; free: 1 allocation, temporary (no successful allocation in between).
    "failed_alloc": dict(allocations=1, allocated_bytes=64, leaked_bytes=0, leaked_blocks=0,
                         temporary=1, peak_bytes=64, at_peak_bytes=0, entries={"malloc": 1},
                         file="realloc.c", module="/realloc"),
    # malloc(20000) freed at once: the global peak 760 + 20,000.
    "peak_block": dict(allocations=1, allocated_bytes=20000, leaked_bytes=0, leaked_blocks=0,
                       temporary=1, peak_bytes=20000, at_peak_bytes=20000, entries={"malloc": 1},
                       file="realloc.c", module="/realloc"),
    # realloc(p, 0) frees only.
    "free_with_realloc_zero": dict(allocations=0),
}
REALLOC_SUMMARY = {
    "allocations": 18,        # 9 + 1 + 2 + 2 + 1 + 1 + 1 + 1
    "frees": 16,              # 8 (grow) + 1 (shrink frees 4096) + 1 (50) + 1 (80) + 4 + 1 (realloc(p,0))
    "allocated_bytes": 29130,  # 8,176 + 100 + 550 + 240 + 0 + 64 + 20,000
    "peak_bytes": 20760,      # 100 + 500 + 160 + 20,000 (any realloc overlap is at most 6,144)
    "leaked_bytes": 660,      # 500 + 160
    "leaked_blocks": 2,
    "temporary": (4, 15),     # 4 certain; up to 11 more if old realloc blocks count
    "threads": 1,
}


def case_realloc(env, workroot):
    return simple_case(env, workroot, "realloc", "realloc", stdout=b"realloc: done\n",
                       process=dict(exe="realloc", status=0, how="return"),
                       summary=REALLOC_SUMMARY, funcs=REALLOC_FUNCS)


# aligned.c - single-threaded, no stdio: exact. Requested sizes.
ALIGNED_FUNCS = {
    # 3 x posix_memalign(64, 1000), the first freed after the others were made.
    "posix_memalign_site": dict(allocations=3, allocated_bytes=3000, leaked_bytes=2000, leaked_blocks=2,
                                temporary=0, peak_bytes=3000, at_peak_bytes=2000,
                                entries={"posix_memalign": 3}, file="aligned.c", module="/aligned"),
    # alignment 3 -> EINVAL: nothing.
    "posix_memalign_bad": dict(allocations=0),
    # a, b = aligned_alloc(64, 128); free(a); free(b): b is temporary (free(a) is
    # not an allocation), a is not (b was allocated in between).
    "aligned_alloc_site": dict(allocations=2, allocated_bytes=256, leaked_bytes=0, leaked_blocks=0,
                               temporary=1, at_peak_bytes=0, entries={"aligned_alloc": 2},
                               file="aligned.c", module="/aligned"),
    "memalign_site": dict(allocations=1, allocated_bytes=100, leaked_bytes=100, leaked_blocks=1,
                          temporary=0, peak_bytes=100, at_peak_bytes=100, entries={"memalign": 1},
                          file="aligned.c", module="/aligned"),
    # valloc(5000) freed at once; live at the global peak 2,000 + 100 + 5,000.
    "valloc_site": dict(allocations=1, allocated_bytes=5000, leaked_bytes=0, leaked_blocks=0,
                        temporary=1, peak_bytes=5000, at_peak_bytes=5000, entries={"valloc": 1},
                        file="aligned.c", module="/aligned"),
    # pvalloc(100): the requested 100, not the page glibc hands out.
    "pvalloc_site": dict(allocations=1, allocated_bytes=100, leaked_bytes=0, leaked_blocks=0,
                         temporary=1, peak_bytes=100, at_peak_bytes=0, entries={"pvalloc": 1},
                         file="aligned.c", module="/aligned"),
}
ALIGNED_SUMMARY = {
    "allocations": 8, "frees": 5,
    "allocated_bytes": 8456,   # 3,000 + 256 + 100 + 5,000 + 100
    "peak_bytes": 7100,        # 2,000 + 100 + 5,000 during valloc_site
    "leaked_bytes": 2100, "leaked_blocks": 3,
    "temporary": 3,            # aligned_alloc b, valloc, pvalloc
    "threads": 1,
}


def case_aligned(env, workroot):
    return simple_case(env, workroot, "aligned", "aligned", stdout=b"aligned: done\n",
                       process=dict(exe="aligned", status=0, how="return"),
                       summary=ALIGNED_SUMMARY, funcs=ALIGNED_FUNCS)


# cxx.cpp - libstdc++ adds its 72,704-byte emergency pool at start-up, so the
# totals are bounds; the per-function numbers are exact.
CXX_FUNCS = {
    "new_delete_scalar": dict(allocations=10, allocated_bytes=40, leaked_bytes=0, leaked_blocks=0,
                              temporary=10, peak_bytes=4, at_peak_bytes=0,
                              entries={"operator new": 10}, file="cxx.cpp", module="/cxx"),
    # 5 x new int[25] = 5 x 100, live at the program's peak, deleted later.
    "new_array": dict(allocations=5, allocated_bytes=500, leaked_bytes=0, leaked_blocks=0, temporary=0,
                      peak_bytes=500, at_peak_bytes=500, entries={"operator new[]": 5},
                      file="cxx.cpp", module="/cxx"),
    # new(nothrow) double[8] (64, deleted) + new(nothrow) long (8, leaked).
    "nothrow_new": dict(allocations=2, allocated_bytes=72, leaked_bytes=8, leaked_blocks=1, temporary=0,
                        at_peak_bytes=8,
                        entries={"operator new[](nothrow)": 1, "operator new(nothrow)": 1},
                        file="cxx.cpp", module="/cxx"),
    # alignas(64) struct of 128 bytes: 128 + 3 x 128 + 128 + 2 x 128 = 896, all
    # live at the program's peak; only the last (256) leaks.
    "aligned_new": dict(allocations=4, allocated_bytes=896, leaked_bytes=256, leaked_blocks=1,
                        temporary=0, at_peak_bytes=896,
                        entries={"operator new(align)": 1, "operator new[](align)": 1,
                                 "operator new(align, nothrow)": 1, "operator new[](align, nothrow)": 1},
                        file="cxx.cpp", module="/cxx"),
    # std::vector<int> capacities 1..128: 8 allocations, 4 x 255 bytes, peak 256 + 512,
    # the last buffer temporary (see cxx.cpp).
    "vector_growth": dict(match="any", allocations=8, allocated_bytes=1020, leaked_bytes=0,
                          leaked_blocks=0, temporary=1, peak_bytes=768, at_peak_bytes=0,
                          entries={"operator new": 8}),
    "make_shapes": dict(allocations=3, allocated_bytes=72, leaked_bytes=72, leaked_blocks=3, temporary=0,
                        peak_bytes=72, at_peak_bytes=0, entries={"operator new": 3},
                        file="cxx.cpp", module="/cxx"),
    "leak_cxx": dict(allocations=2, allocated_bytes=116, leaked_bytes=116, leaked_blocks=2, temporary=0,
                     at_peak_bytes=0, entries={"operator new[]": 2}, file="cxx.cpp", module="/cxx"),
    "free_arrays": dict(allocations=0),
    # the exception object of the std::bad_alloc thrown by the failed new char[huge]
    "bad_alloc_catch": dict(match="any", allocations=1, allocated_bytes=136, leaked_bytes=0,
                            leaked_blocks=0, temporary=1, peak_bytes=136, at_peak_bytes=0,
                            entries={"malloc": 1}),
}
CXX_POOL_SLACK = 72704 + 4096  # libstdc++'s emergency pool and a little room
CXX_SUMMARY = {
    "allocations": (35, 35 + 10),
    "allocated_bytes": (2852, 2852 + CXX_POOL_SLACK),
    "leaked_bytes": (452, 452 + CXX_POOL_SLACK),   # 8 + 256 + 72 + 116
    "leaked_blocks": (7, 7 + 10),
    "peak_bytes": (1404, 1404 + CXX_POOL_SLACK),   # 500 + 8 + 896 at the end of aligned_new
    "temporary": (12, 12 + 10),  # 10 + the vector's last buffer + the exception
}


def cxx_extra(case, rep):
    names = [f.get("function") for s in sites_of(rep) for f in (s.get("frames") or [])[:1]]
    case.check("cxx: C++ names are demangled in full (shapes::make_shapes(int))",
               "shapes::make_shapes(int)" in names,
               "frames[0] functions: %s" % sorted({n for n in names if n})[:30])
    vec = select_sites(rep, "vector_growth", "any")
    if vec:
        f0 = {(base_name(s["frames"][0].get("function")), str(s["frames"][0].get("file") or "").split("/")[-1])
              for s in vec}
        case.eq("cxx: vector_growth's allocations come from std::__new_allocator<int>::allocate",
                {("allocate", "new_allocator.h")}, f0)
    exc = select_sites(rep, "bad_alloc_catch", "any")
    case.eq("cxx: the failed new char[huge] is not an allocation; only the exception object is",
            [("__cxa_allocate_exception", True)],
            [(base_name(s["frames"][0].get("function")), "bad_alloc_catch" in frame_names(s)) for s in exc])
    # No site may stop at libstdc++'s operator new / the allocator itself.
    bad = [s["frames"][0].get("function") for s in sites_of(rep)
           if s.get("frames") and not s["frames"][0].get("inlined")
           and str(s["frames"][0].get("function", "")).startswith(("operator new", "malloc", "aligned_alloc"))]
    case.check("cxx: no site has an allocator entry point as frames[0]", not bad, "found %s" % bad)


def case_cxx(env, workroot):
    return simple_case(env, workroot, "cxx", "cxx", stdout=b"cxx: done\n",
                       process=dict(exe="cxx", status=0, how="return"),
                       summary=CXX_SUMMARY, funcs=CXX_FUNCS, extra=cxx_extra)


# forkexec.c
FORKEXEC_PARENT_FUNCS = {
    # a, b = malloc(1111); free(a): 2,222 bytes, 1,111 leaked; b is live at the
    # peak (after parent_after's 3,333).
    "parent_alloc": dict(allocations=2, allocated_bytes=2222, leaked_bytes=1111, leaked_blocks=1,
                         temporary=0, at_peak_bytes=1111, entries={"malloc": 2},
                         file="forkexec.c", module="/forkexec"),
    "parent_after": dict(allocations=1, allocated_bytes=3333, leaked_bytes=3333, leaked_blocks=1,
                         temporary=0, peak_bytes=3333, at_peak_bytes=3333, entries={"malloc": 1},
                         file="forkexec.c", module="/forkexec"),
    # made in the forked child only: must not show up in the parent's trace
    "child_work": dict(allocations=0),
}
FORKEXEC_PARENT_SUMMARY = {
    "allocations": 3, "frees": 1, "allocated_bytes": 5555, "peak_bytes": 4444,
    "leaked_bytes": 4444, "leaked_blocks": 2, "temporary": 0, "threads": 1,
}
FORKEXEC_CHILD_FUNCS = {
    # 3 x malloc(2222) in the fork child, never freed, then exit(7).
    "child_work": dict(allocations=3, allocated_bytes=6666, leaked_bytes=6666, leaked_blocks=3,
                       temporary=0, peak_bytes=6666, entries={"malloc": 3},
                       file="forkexec.c", module="/forkexec"),
    "parent_after": dict(allocations=0),
}


def resolve_trace(path, parent_trace, cwd):
    if not path:
        return None
    if os.path.isabs(path):
        return path
    for base in (os.path.dirname(parent_trace), cwd):
        p = os.path.join(base, path)
        if os.path.exists(p):
            return p
    return os.path.join(os.path.dirname(parent_trace), path)


def collect_descendants(case, env, trace, rep, label, seen):
    """Follows "children" recursively; returns [(trace, report, how, parent_report)]."""
    out = []
    for i, ch in enumerate(rep.get("children") or []):
        p = resolve_trace(ch.get("trace"), trace, case.dir)
        clabel = "%s child %d (%s, pid %s)" % (label, i, ch.get("how"), ch.get("pid"))
        if not case.check("%s: trace file exists" % clabel, p and os.path.isfile(p), "trace %r" % ch.get("trace")):
            continue
        real = os.path.realpath(p)
        if real in seen:
            continue
        seen.add(real)
        crep = report_json(case, env, p, clabel)
        if crep is None:
            continue
        case.eq("%s: process.pid matches the children entry" % clabel, ch.get("pid"),
                (crep.get("process") or {}).get("pid"))
        out.append((p, crep, ch.get("how"), rep))
        out.extend(collect_descendants(case, env, p, crep, clabel, seen))
    return out


def case_forkexec(env, workroot):
    case = Case("forkexec", workroot)
    trace = memviz_run(case, env, "forkexec", stdout=b"churn: done\nforkexec: ok\n",
                       stderr_lines=["churn: stderr check"])
    if not trace:
        return case
    rep = report_json(case, env, trace, "forkexec")
    if rep is None:
        return case
    check_process(case, rep, "forkexec", exe="forkexec", argv=[env.prog("forkexec")], status=0, how="return")
    check_summary(case, rep, "forkexec", FORKEXEC_PARENT_SUMMARY)
    check_functions(case, rep, "forkexec", FORKEXEC_PARENT_FUNCS)
    children = rep.get("children") or []
    case.eq("forkexec: number of direct children", (2, None), len(children))
    case.check("forkexec: children are forks", all(c.get("how") in ("fork", "exec") for c in children)
               and any(c.get("how") == "fork" for c in children), "how: %s" % [c.get("how") for c in children])
    ppid = (rep.get("process") or {}).get("pid")
    desc = collect_descendants(case, env, trace, rep, "forkexec", {os.path.realpath(trace)})

    # The fork child that ran child_work.
    forked = [(t, r) for t, r, how, _ in desc if select_sites(r, "child_work")]
    if case.check("forkexec: a child trace has child_work", len(forked) == 1,
                  "%d traces with child_work among %d descendants" % (len(forked), len(desc))):
        t, r = forked[0]
        lab = "fork child"
        check_process(case, r, lab, exe="forkexec", status=7, how="exit")
        case.eq("%s: process.ppid is the parent" % lab, ppid, (r.get("process") or {}).get("ppid"))
        check_functions(case, r, lab, FORKEXEC_CHILD_FUNCS)

    # The exec'd churn: its own image, so churn's exact numbers.
    churns = [(t, r, how, par) for t, r, how, par in desc
              if str((r.get("process") or {}).get("exe", "")).endswith("/churn")]
    if case.check("forkexec: a descendant trace is the exec'd churn", len(churns) == 1,
                  "exes: %s" % [(r.get("process") or {}).get("exe") for _, r, _, _ in desc]):
        t, r, how, par = churns[0]
        lab = "exec child"
        case.eq("%s: children entry how" % lab, "exec", how)
        # forkexec passes readlink(/proc/self/exe)-based path: the real path
        check_process(case, r, lab, exe="churn", argv=[os.path.realpath(env.prog("churn"))], status=0,
                      how="return")
        case.check("%s: trace named memviz.churn.PID.mvz" % lab,
                   os.path.basename(t).startswith("memviz.churn.") and t.endswith(".mvz"), t)
        case.check("%s: same directory as the parent's trace" % lab,
                   os.path.realpath(os.path.dirname(t)) == os.path.realpath(case.dir), t)
        cpid = (r.get("process") or {}).get("pid")
        case.eq("%s: process.ppid is the parent" % lab, ppid, (r.get("process") or {}).get("ppid"))
        case.check("%s: pid differs from the parent's" % lab, cpid != ppid, "pid %r" % cpid)
        check_summary(case, r, lab, CHURN_SUMMARY)
        check_functions(case, r, lab, CHURN_FUNCS)
    return case


def case_forkexec_nofollow(env, workroot):
    """--no-follow: only the parent is traced; no other trace file appears."""
    case = Case("forkexec-no-follow", workroot)
    trace = memviz_run(case, env, "forkexec", opts=["--no-follow"],
                       stdout=b"churn: done\nforkexec: ok\n", stderr_lines=["churn: stderr check"],
                       expect_files=["forkexec.mvz"])
    if trace:
        rep = report_json(case, env, trace, "forkexec")
        if rep is not None:
            case.eq("forkexec: no children", [], rep.get("children") or [])
            check_summary(case, rep, "forkexec", FORKEXEC_PARENT_SUMMARY)
            check_functions(case, rep, "forkexec", FORKEXEC_PARENT_FUNCS)
    return case


# spawn.c
def find_churn_child(case, env, trace, rep, label):
    """The exec'd/spawned churn among the descendants of rep, checked against
    churn's exact numbers. Returns (trace, report, how) or None."""
    desc = collect_descendants(case, env, trace, rep, label, {os.path.realpath(trace)})
    churns = [(t, r, how) for t, r, how, _ in desc
              if str((r.get("process") or {}).get("exe", "")).endswith("/churn")]
    if not case.check("%s: a child trace is churn's" % label, len(churns) == 1,
                      "children: %s; exes: %s; files in the directory: %s" % (
                          rep.get("children"), [(r.get("process") or {}).get("exe") for _, r, _, _ in desc],
                          sorted(os.listdir(case.dir)))):
        return None
    t, r, how = churns[0]
    lab = "churn"
    check_process(case, r, lab, exe="churn", argv=[os.path.realpath(env.prog("churn"))], status=0,
                  how="return")
    case.check("%s: trace named memviz.churn.PID.mvz next to the parent's" % lab,
               os.path.basename(t) == "memviz.churn.%s.mvz" % (r.get("process") or {}).get("pid")
               and os.path.realpath(os.path.dirname(t)) == os.path.realpath(case.dir), t)
    check_summary(case, r, lab, CHURN_SUMMARY)
    check_functions(case, r, lab, CHURN_FUNCS)
    return churns[0]


def case_exec_only(env, workroot):
    """spawn exec: the process replaces itself with churn (same pid, no fork)."""
    case = Case("exec-only", workroot)
    trace = memviz_run(case, env, "spawn", args=["exec"], stdout=b"churn: done\n",
                       stderr_lines=["churn: stderr check"])
    if not trace:
        return case
    rep = report_json(case, env, trace, "spawn")
    if rep is None:
        return case
    check_process(case, rep, "spawn", exe="spawn", argv=[env.prog("spawn"), "exec"])
    # before_start: 2 x malloc(500) before execv (what happens to them at exec
    # is not checked: the image is gone).
    check_functions(case, rep, "spawn", {
        "before_start": dict(allocations=2, allocated_bytes=1000, temporary=0, peak_bytes=1000,
                             entries={"malloc": 2}, file="spawn.c", module="/spawn"),
        "after_spawn": dict(allocations=0)})
    found = find_churn_child(case, env, trace, rep, "spawn")
    if found:
        t, r, how = found
        case.eq("churn: children entry how", "exec", how)
        case.eq("churn: same pid as the image it replaced", (rep.get("process") or {}).get("pid"),
                (r.get("process") or {}).get("pid"))
    return case


def case_posix_spawn(env, workroot, mode="spawn"):
    """spawn spawn: posix_spawn (clone + exec, no fork handlers) of churn.
    spawn vfork: the same with vfork() + execv()."""
    case = Case("posix-spawn" if mode == "spawn" else "vfork-exec", workroot)
    trace = memviz_run(case, env, "spawn", args=[mode], stdout=b"churn: done\nspawn: ok\n",
                       stderr_lines=["churn: stderr check"])
    if not trace:
        return case
    rep = report_json(case, env, trace, "spawn")
    if rep is None:
        return case
    check_process(case, rep, "spawn", exe="spawn", argv=[env.prog("spawn"), mode], status=0, how="return")
    # before_start 2 x 500 + after_spawn 300, all kept; posix_spawn allocates nothing.
    check_summary(case, rep, "spawn", {"allocations": 3, "frees": 0, "allocated_bytes": 1300,
                                       "peak_bytes": 1300, "leaked_bytes": 1300, "leaked_blocks": 3,
                                       "temporary": 0, "threads": 1})
    check_functions(case, rep, "spawn", {
        "before_start": dict(allocations=2, allocated_bytes=1000, leaked_bytes=1000, leaked_blocks=2,
                             temporary=0, peak_bytes=1000, at_peak_bytes=1000, entries={"malloc": 2},
                             file="spawn.c", module="/spawn"),
        "after_spawn": dict(allocations=1, allocated_bytes=300, leaked_bytes=300, leaked_blocks=1,
                            temporary=0, peak_bytes=300, at_peak_bytes=300, entries={"malloc": 1},
                            file="spawn.c", module="/spawn")})
    found = find_churn_child(case, env, trace, rep, "spawn")
    if found:
        t, r, how = found
        case.eq("churn: process.ppid is the parent", (rep.get("process") or {}).get("pid"),
                (r.get("process") or {}).get("ppid"))
    return case


# stacks.c - exact.
STACKS_SUMMARY = {"allocations": 4096, "frees": 4096, "allocated_bytes": 32768, "peak_bytes": 8,
                  "leaked_bytes": 0, "leaked_blocks": 0, "temporary": 4096, "threads": 1}


def stacks_extra(case, rep, rounds=1):
    sites = select_sites(rep, "alloc_leaf")
    case.eq("stacks: number of alloc_leaf sites (one per distinct stack)", 4096, len(sites))
    case.eq("stacks: allocations per alloc_leaf site", {rounds},
            {s.get("allocations") for s in sites})
    paths = set()
    bad = []
    for s in sites:
        names = frame_names(s)
        # alloc_leaf, dispatch, then 12 x (step_a|step_b, dispatch), walk_all, main
        middle = names[1:26]
        steps = tuple(n for n in middle if n != "dispatch")
        if len(names) < 28 or names[26:28] != ["walk_all", "main"] or len(steps) != 12 \
                or set(steps) - {"step_a", "step_b"}:
            bad.append(names[:30])
        paths.add(steps)
    case.check("stacks: every alloc_leaf stack is alloc_leaf, 13 x dispatch with 12 x step_a/step_b, "
               "walk_all, main", not bad, "e.g. %s" % (bad[:1],))
    case.eq("stacks: distinct step_a/step_b paths", 4096, len(paths))


def case_stacks(env, workroot):
    return simple_case(env, workroot, "stacks", "stacks", stdout=b"stacks: done\n",
                       process=dict(exe="stacks", status=0, how="return"),
                       summary=STACKS_SUMMARY, extra=stacks_extra)


def case_stacks_rounds(env, workroot):
    """The same 4,096 stacks met 40 times each: the agent's stack cache
    misses on most lookups in its first sizes and grows twice mid-run; ids
    must stay exact across that (one site per stack, 40 allocations each)."""
    summary = {k: (v if k in ("peak_bytes", "threads") else 40 * v)
               for k, v in STACKS_SUMMARY.items()}
    return simple_case(env, workroot, "stacks-rounds", "stacks", args=["40"],
                       stdout=b"stacks: done\n", process=dict(exe="stacks", status=0, how="return"),
                       summary=summary, extra=lambda case, rep: stacks_extra(case, rep, 40))


def threadexit_extra(case, rep):
    sites = select_sites(rep, "worker_churn")
    allocs = sum(s.get("allocations", 0) for s in sites)
    case.check("threadexit: worker_churn allocated", allocs > 0, "%d allocations" % allocs)
    case.eq("threadexit: worker_churn allocated 64 bytes per allocation", 64 * allocs,
            sum(s.get("allocated_bytes", 0) for s in sites))
    # each worker holds at most one block when the process ends
    case.eq("threadexit: worker_churn leaked_bytes", (0, 256), sum(s.get("leaked_bytes", 0) for s in sites))
    case.eq("threadexit: worker_churn entries are all malloc", {"malloc"},
            {k for s in sites for k in (s.get("entries") or {})})


def case_threadexit(env, workroot):
    """exit() from one thread while four others keep allocating."""
    return simple_case(env, workroot, "threadexit", "threadexit", exit_code=5,
                       stdout=b"threadexit: exiting\n",
                       process=dict(exe="threadexit", status=5, how="exit"),
                       summary={"threads": (5, None)}, extra=threadexit_extra)


# lifecycle.cpp - per-function exact; libstdc++'s pool, the DTV and glibc's
# thread_local destructor entry make the totals bounds.
LIFECYCLE_FUNCS = {
    # before main, freed by the static destructor
    "ctor_alloc": dict(allocations=1, allocated_bytes=1000, leaked_bytes=0, leaked_blocks=0, temporary=0,
                       peak_bytes=1000, entries={"operator new[]": 1}, file="lifecycle.cpp",
                       module="/lifecycle", caller=["Holder"]),
    # during static destruction, never freed
    "dtor_alloc": dict(allocations=1, allocated_bytes=40, leaked_bytes=40, leaked_blocks=1, temporary=0,
                       peak_bytes=40, entries={"malloc": 1}, file="lifecycle.cpp", module="/lifecycle",
                       caller=["~Holder"]),
    # ELF constructor, freed by the ELF destructor
    "c_ctor_alloc": dict(allocations=1, allocated_bytes=200, leaked_bytes=0, leaked_blocks=0, temporary=0,
                         peak_bytes=200, entries={"malloc": 1}, file="lifecycle.cpp", module="/lifecycle",
                         caller=["c_ctor"]),
    # thread_local constructor in the second thread, freed at its exit
    "tl_alloc": dict(allocations=1, allocated_bytes=300, leaked_bytes=0, leaked_blocks=0, peak_bytes=300,
                     entries={"malloc": 1}, file="lifecycle.cpp", module="/lifecycle", caller=["TL"]),
    "main_leak": dict(allocations=1, allocated_bytes=7, leaked_bytes=7, leaked_blocks=1, temporary=0,
                      peak_bytes=7, entries={"malloc": 1}, file="lifecycle.cpp", module="/lifecycle",
                      caller=["main"]),
}
LIFECYCLE_SUMMARY = {
    "allocations": (5, 5 + 10),
    "allocated_bytes": (1547, 1547 + CXX_POOL_SLACK),  # 1,000 + 40 + 200 + 300 + 7
    "leaked_bytes": (47, 47 + CXX_POOL_SLACK),         # 40 + 7
    "leaked_blocks": (2, 2 + 10),
    "peak_bytes": (1500, 1500 + CXX_POOL_SLACK),       # 1,000 + 200 + 300 while the thread runs
    "threads": (2, None),
}


def case_lifecycle(env, workroot):
    return simple_case(env, workroot, "lifecycle", "lifecycle", stdout=b"lifecycle: done\n",
                       process=dict(exe="lifecycle", status=0, how="return"),
                       summary=LIFECYCLE_SUMMARY, funcs=LIFECYCLE_FUNCS)


# fdchaos.c - single-threaded, no stdio: exact.
FDCHAOS_FUNCS = {
    "before_close": dict(allocations=2, allocated_bytes=222, leaked_bytes=222, leaked_blocks=2, temporary=0,
                         at_peak_bytes=222, entries={"malloc": 2}, file="fdchaos.c", module="/fdchaos"),
    # 1,000 x malloc(64) freed at once (temporary), then 3 x malloc(222) kept;
    # two call lines, so no site peak is checked.
    "after_close": dict(allocations=1003, allocated_bytes=64666, leaked_bytes=666, leaked_blocks=3,
                        temporary=1000, at_peak_bytes=666, entries={"malloc": 1003},
                        file="fdchaos.c", module="/fdchaos"),
}
FDCHAOS_SUMMARY = {"allocations": 1005, "frees": 1000, "allocated_bytes": 64888,
                   "peak_bytes": 888,  # 222 + 666 at the end (the 64-byte blocks peak at 286)
                   "leaked_bytes": 888, "leaked_blocks": 5, "temporary": 1000, "threads": 1}


def case_fdchaos(env, workroot):
    """closefrom(3) and reuse of descriptor 3 by the program: the program's
    file must stay its own (exit 0, not 3) and the trace must stay complete."""
    case = simple_case(env, workroot, "fdchaos", "fdchaos", stdout=b"fdchaos: done\n",
                       process=dict(exe="fdchaos", status=0, how="return"),
                       summary=FDCHAOS_SUMMARY, funcs=FDCHAOS_FUNCS, other_files=["fdchaos.out"])
    return case


# userns.c - enters a user namespace, which needs a single-threaded caller.
USERNS_FUNCS = {
    "before": dict(allocations=3, allocated_bytes=300, leaked_bytes=300, leaked_blocks=3,
                   temporary=0, file="userns.c", module="/userns", caller=["main"]),
    "after": dict(allocations=5, allocated_bytes=1000, leaked_bytes=600, leaked_blocks=3,
                  temporary=1, file="userns.c", module="/userns", caller=["main"]),
}
USERNS_SUMMARY = {"allocations": 8, "frees": 2, "allocated_bytes": 1300, "peak_bytes": 1300,
                  "leaked_bytes": 900, "leaked_blocks": 6, "temporary": 1, "threads": 1}


def case_userns(env, workroot):
    """unshare(CLONE_NEWUSER) succeeds under memviz (the agent's writer
    thread steps aside: hooks_ns.c), and the allocations on both sides of
    it are traced. The program's own run without memviz must succeed too,
    or the machine cannot run this test."""
    case = Case("userns", workroot)
    rc, out, err, _ = run([env.prog("userns")], cwd=case.dir)
    if not case.check("userns runs without memviz (user namespaces available)", rc == 0,
                      "%s; stderr: %s" % (rc_str(rc), tail(err))):
        return case
    trace = memviz_run(case, env, "userns")
    if trace:
        rep = report_json(case, env, trace, "userns")
        if rep is not None:
            check_summary(case, rep, "userns", USERNS_SUMMARY)
            check_functions(case, rep, "userns", USERNS_FUNCS)
    rc, out, err, _ = run([env.memviz, "run", "-o", os.path.join(case.dir, "unshare.mvz"), "--",
                           "unshare", "--user", "--map-root-user", "id", "-u"], cwd=case.dir)
    case.eq("unshare --user --map-root-user id -u under memviz run: exit", 0, rc)
    case.eq("unshare --user --map-root-user id -u under memviz run: output", b"0\n", out)
    return case


# dlopen.c + plugin/mvzplugin.c - dlopen allocates internally: totals are bounds.
DLOPEN_FUNCS = {
    # malloc(1000) in the plugin's constructor, under dlopen (and memviz's dlopen).
    "plugin_init": dict(allocations=1, allocated_bytes=1000, leaked_bytes=1000, leaked_blocks=1,
                        temporary=0, entries={"malloc": 1}, file="mvzplugin.c",
                        module="libmvzplugin.so"),
    # 4 x malloc(512) in the plugin, leaked; the plugin is unloaded by then, but the
    # frames must still name its function, source and module.
    "plugin_leak": dict(allocations=4, allocated_bytes=2048, leaked_bytes=2048, leaked_blocks=4,
                        temporary=0, peak_bytes=2048, entries={"malloc": 4},
                        file="mvzplugin.c", module="libmvzplugin.so", caller=["plugin_run", "main"]),
    "plugin_temp": dict(allocations=1, allocated_bytes=300, leaked_bytes=0, leaked_blocks=0,
                        temporary=1, peak_bytes=300, entries={"malloc": 1},
                        file="mvzplugin.c", module="libmvzplugin.so", caller=["plugin_run", "main"]),
    # after dlclose, from the main program
    "after_unload": dict(allocations=1, allocated_bytes=77, leaked_bytes=77, leaked_blocks=1,
                         temporary=0, peak_bytes=77, entries={"malloc": 1},
                         file="dlopen.c", module="/dlopen", caller=["main"]),
}
DLOPEN_SUMMARY = {
    "allocations": (7, 7 + 100),
    "allocated_bytes": (3425, None),      # 1,000 + 2,048 + 300 + 77
    "leaked_bytes": (3125, None),         # 1,000 + 2,048 + 77
    "peak_bytes": (3348, None),           # 1,000 + 2,048 + 300 during plugin_temp
    "threads": 1,
}


def dlopen_extra(case, rep):
    """The constructor's allocation was made inside memviz's dlopen: its stack
    reaches main through the dynamic linker and has no frame of memviz's."""
    sites = select_sites(rep, "plugin_init", "top")
    case.check("dlopen: plugin_init's stack reaches main",
               sites and all("main" in frame_names(s) for s in sites),
               "; ".join(" <- ".join(frame_names(s)) for s in sites))
    ours = [f.get("module") for s in sites for f in s.get("frames") or []
            if "libmemviz" in str(f.get("module") or "")]
    case.check("dlopen: no memviz frame in plugin_init's stack", not ours, "%s" % ours)


def case_dlopen(env, workroot):
    return simple_case(env, workroot, "dlopen", "dlopen", stdout=b"plugin unloaded\n",
                       process=dict(exe="dlopen", status=0, how="return"),
                       summary=DLOPEN_SUMMARY, funcs=DLOPEN_FUNCS, extra=dlopen_extra)


# recursion.c - exact totals: 2 allocations (42 + 43), both leaked.
RECURSION_SUMMARY = {"allocations": 2, "frees": 0, "allocated_bytes": 85, "peak_bytes": 85,
                     "leaked_bytes": 85, "leaked_blocks": 2, "temporary": 0, "threads": 1}


def recursion_extra(depth_cap):
    def check(case, rep):
        sites = select_sites(rep, "alloc_at_bottom")
        if case.check("recursion: one alloc_at_bottom site", len(sites) == 1, "%d sites" % len(sites)):
            names = frame_names(sites[0])
            if depth_cap is None:
                # alloc_at_bottom, 200 x recurse, main, libc start-up: 205 <= 256.
                case.eq("recursion: alloc_at_bottom frames[1:201] are recurse", ["recurse"] * 200, names[1:201])
                case.eq("recursion: frames[201] is main", "main", names[201] if len(names) > 201 else None)
                case.eq("recursion: number of frames", (202, 256), len(names))
            else:
                case.eq("recursion --depth %d: number of frames" % depth_cap, (depth_cap - 2, depth_cap + 1),
                        len(names))
                case.check("recursion --depth %d: the innermost frames are kept" % depth_cap,
                           names[:1] == ["alloc_at_bottom"] and names[1:depth_cap - 2] == ["recurse"] * (depth_cap - 3)
                           and "main" not in names, "frames: %s" % names[:8])
        deep = select_sites(rep, "alloc_deep")
        if depth_cap is None and case.check("recursion: one alloc_deep site", len(deep) == 1, "%d sites" % len(deep)):
            names = frame_names(deep[0])
            # 1,000 x recurse_deep: cut at the default cap of 256 frames (one extra
            # frame allowed for a truncation marker), innermost kept.
            case.eq("recursion: alloc_deep number of frames (cap 256)", (250, 257), len(names))
            case.check("recursion: alloc_deep keeps the innermost frames",
                       names[1:249] == ["recurse_deep"] * 248 and "main" not in names,
                       "frames: %s ... %s" % (names[:4], names[-3:]))
        case.eq("recursion: alloc_at_bottom allocated_bytes", 42, sum(s.get("allocated_bytes", 0) for s in sites))
    return check


def case_recursion(env, workroot):
    return simple_case(env, workroot, "recursion", "recursion", stdout=b"recursion: done\n",
                       process=dict(exe="recursion", status=0, how="return"),
                       summary=RECURSION_SUMMARY, extra=recursion_extra(None))


def case_recursion_depth(env, workroot):
    return simple_case(env, workroot, "recursion-depth50", "recursion", opts=["--depth", "50"],
                       stdout=b"recursion: done\n", process=dict(status=0, how="return"),
                       summary=RECURSION_SUMMARY, extra=recursion_extra(50))


# nofp.c - -O2 -fomit-frame-pointer; exact totals.
NOFP_SUMMARY = {"allocations": 2, "frees": 0, "allocated_bytes": 3000, "peak_bytes": 3000,
                "leaked_bytes": 3000, "leaked_blocks": 2, "temporary": 0, "threads": 1}


def nofp_extra(case, rep):
    s3 = [s for s in select_sites(rep, "level3")]
    if case.check("nofp: a site with frames[0] = level3", len(s3) == 1, "%d sites" % len(s3)):
        case.eq("nofp: level3 site allocated_bytes", 1000, s3[0].get("allocated_bytes"))
        case.eq("nofp: call chain level3 <- level2 <- level1 <- main",
                ["level3", "level2", "level1", "main"], frame_names(s3[0])[:4])
    si = select_sites(rep, "inl_alloc")
    if case.check("nofp: a site with frames[0] = inl_alloc (inlined)", len(si) == 1,
                  "%d sites; frames[0] functions: %s" % (len(si), [frame_names(s)[:2] for s in sites_of(rep)])):
        fr = si[0]["frames"]
        case.eq("nofp: inl_alloc site allocated_bytes", 2000, si[0].get("allocated_bytes"))
        case.eq("nofp: inlined chain inl_alloc <- level3 <- level2 <- level1 <- main",
                ["inl_alloc", "level3", "level2", "level1", "main"], frame_names(si[0])[:5])
        case.eq("nofp: inl_alloc frame is marked inlined, level3 is not",
                [True, False], [bool(f.get("inlined")) for f in fr[:2]])
        case.check("nofp: inl_alloc frame has file nofp.c and a line",
                   str(fr[0].get("file") or "").endswith("nofp.c") and (fr[0].get("line") or 0) > 0,
                   "file %r line %r" % (fr[0].get("file"), fr[0].get("line")))


BIGFRAME_FUNCS = {
    "big_frame": dict(allocations=3, allocated_bytes=333, leaked_bytes=333, leaked_blocks=3,
                      temporary=0, entries={"malloc": 3}, file="bigframe.c", module="/bigframe",
                      caller=["main"]),
    "small_leaf": dict(allocations=1, allocated_bytes=222, leaked_bytes=222, leaked_blocks=1,
                       temporary=0, entries={"malloc": 1}, file="bigframe.c", module="/bigframe",
                       caller=["through_big"]),
}
BIGFRAME_SUMMARY = {"allocations": 4, "frees": 0, "allocated_bytes": 555, "leaked_bytes": 555,
                    "leaked_blocks": 4, "temporary": 0, "threads": 1}


def bigframe_extra(case, rep):
    s = select_sites(rep, "small_leaf")
    if case.check("bigframe: one site with frames[0] = small_leaf", len(s) == 1, "%d sites" % len(s)):
        case.eq("bigframe: call chain small_leaf <- through_big <- main (a wide rule mid-stack)",
                ["small_leaf", "through_big", "main"], frame_names(s[0])[:3])


def case_bigframe(env, workroot):
    return simple_case(env, workroot, "bigframe", "bigframe", stdout=b"bigframe: done\n",
                       process=dict(exe="bigframe", status=0, how="return"),
                       summary=BIGFRAME_SUMMARY, funcs=BIGFRAME_FUNCS, extra=bigframe_extra)


def case_nofp(env, workroot):
    return simple_case(env, workroot, "nofp", "nofp", stdout=b"nofp: done\n",
                       process=dict(exe="nofp", status=0, how="return"),
                       summary=NOFP_SUMMARY, extra=nofp_extra)


# segv.c / sigkill.c - exact totals up to the signal.
SEGV_FUNCS = {
    "seg_alloc": dict(allocations=5, allocated_bytes=5000, leaked_bytes=3000, leaked_blocks=3, temporary=0,
                      peak_bytes=5000, at_peak_bytes=5000, entries={"malloc": 5},
                      file="segv.c", module="/segv", caller=["main"]),
}
SEGV_SUMMARY = {"allocations": 5, "frees": 2, "allocated_bytes": 5000, "peak_bytes": 5000,
                "leaked_bytes": 3000, "leaked_blocks": 3, "temporary": 0, "threads": 1}


def case_segv(env, workroot):
    return simple_case(env, workroot, "segv", "segv", exit_code=128 + 11, stdout=b"segv: crashing\n",
                       process=dict(exe="segv", sig=11, how="signal"),
                       summary=SEGV_SUMMARY, funcs=SEGV_FUNCS)


SIGKILL_FUNCS = {
    # 10 x malloc(100), the first 4 freed: 600 live when SIGKILL arrives 300 ms later.
    "kill_alloc": dict(allocations=10, allocated_bytes=1000, leaked_bytes=600, leaked_blocks=6, temporary=0,
                       peak_bytes=1000, at_peak_bytes=1000, entries={"malloc": 10},
                       file="sigkill.c", module="/sigkill", caller=["main"]),
}
SIGKILL_SUMMARY = {"allocations": 10, "frees": 4, "allocated_bytes": 1000, "peak_bytes": 1000,
                   "leaked_bytes": 600, "leaked_blocks": 6, "temporary": 0, "threads": 1}


def case_sigkill(env, workroot):
    return simple_case(env, workroot, "sigkill", "sigkill", exit_code=128 + 9, stdout=b"sigkill: sleeping\n",
                       process=dict(exe="sigkill", sig=9, how="signal"),
                       summary=SIGKILL_SUMMARY, funcs=SIGKILL_FUNCS)


# exitpaths.c
def exitpaths_case(env, workroot, mode):
    # exit_alloc: 3 x malloc(100) (three call lines), the first freed after the
    # other two were made: 300 bytes, 200 leaked, none temporary. The global peak,
    # 300, is inside exit_alloc when all three are live; the exit handlers' blocks
    # come when 200 are live (200 + 64 < 300), so exit_alloc has all 300 at the peak.
    funcs = {"exit_alloc": dict(allocations=3, allocated_bytes=300, leaked_bytes=200, leaked_blocks=2,
                                temporary=0, at_peak_bytes=300, entries={"malloc": 3},
                                file="exitpaths.c", module="/exitpaths", caller=["main"])}
    atexit_ran = mode in ("return", "exit")   # atexit handlers run on return and exit()
    quick_ran = mode == "quick_exit"          # at_quick_exit handlers only on quick_exit()
    funcs["atexit_alloc"] = (dict(allocations=1, allocated_bytes=64, leaked_bytes=64, leaked_blocks=1,
                                  temporary=0, peak_bytes=64, at_peak_bytes=0, entries={"malloc": 1},
                                  file="exitpaths.c", module="/exitpaths")
                             if atexit_ran else dict(allocations=0))
    funcs["quick_alloc"] = (dict(allocations=1, allocated_bytes=32, leaked_bytes=32, leaked_blocks=1,
                                 temporary=0, peak_bytes=32, at_peak_bytes=0, entries={"malloc": 1},
                                 file="exitpaths.c", module="/exitpaths")
                            if quick_ran else dict(allocations=0))
    extra_bytes = 64 if atexit_ran else 32 if quick_ran else 0
    extra_n = 1 if (atexit_ran or quick_ran) else 0
    summary = {"allocations": 3 + extra_n, "frees": 1, "allocated_bytes": 300 + extra_bytes,
               "peak_bytes": 300, "leaked_bytes": 200 + extra_bytes, "leaked_blocks": 2 + extra_n,
               "temporary": 0, "threads": 1}
    code = {"return": 10, "exit": 11, "_exit": 12, "quick_exit": 13, "abort": 128 + 6}[mode]
    process = dict(exe="exitpaths", argv=[env.prog("exitpaths"), mode],
                   how={"abort": "signal"}.get(mode, mode))
    if mode == "abort":
        process["sig"] = 6
    else:
        process["status"] = code
    return simple_case(env, workroot, "exitpaths-" + mode, "exitpaths", args=[mode], exit_code=code,
                       stdout=("exitpaths: %s\n" % mode).encode(), process=process, summary=summary,
                       funcs=funcs)


# sighandler.c - exact totals.
SIGHANDLER_FUNCS = {
    # 5 x (malloc(24), malloc(24), free the first): 10 allocations, 240 bytes,
    # 5 x 24 leaked; none temporary (the second malloc comes before the free).
    "handler_alloc": dict(allocations=10, allocated_bytes=240, leaked_bytes=120, leaked_blocks=5,
                          temporary=0, at_peak_bytes=120, entries={"malloc": 10},
                          file="sighandler.c", module="/sighandler", caller=["usr1_handler"]),
    # exactly 5 timer-driven malloc(16), kept.
    "alarm_alloc": dict(allocations=5, allocated_bytes=80, leaked_bytes=80, leaked_blocks=5, temporary=0,
                        peak_bytes=80, at_peak_bytes=80, entries={"malloc": 5},
                        file="sighandler.c", module="/sighandler", caller=["alrm_handler"]),
}
SIGHANDLER_SUMMARY = {"allocations": 15, "frees": 5, "allocated_bytes": 320,
                      "peak_bytes": 200,  # 120 + 80 after the last alarm_alloc (the usr1 part peaks at 144)
                      "leaked_bytes": 200, "leaked_blocks": 10, "temporary": 0, "threads": 1}


def sighandler_extra(case, rep):
    for func in ("handler_alloc", "alarm_alloc"):
        sites = select_sites(rep, func)
        no_main = [frame_names(s)[:8] for s in sites if "main" not in frame_names(s)]
        case.check("sighandler: %s stacks unwind through the signal frame to main" % func,
                   sites and not no_main, "stacks without main: %s" % no_main[:2])


def case_sighandler(env, workroot):
    return simple_case(env, workroot, "sighandler", "sighandler", stdout=b"sighandler: done\n",
                       process=dict(exe="sighandler", status=0, how="return"),
                       summary=SIGHANDLER_SUMMARY, funcs=SIGHANDLER_FUNCS, extra=sighandler_extra)


# ringgrow.c: two threads churning flat out, so that their rings grow
# (ring.h) while both threads' events flow; blocks kept across the growth.
RINGGROW_FUNCS = {
    # 2 x 300,000 x malloc(16 + i % 64): 2 x 14,249,488 bytes, all freed.
    "churn_alloc": dict(allocations=600000, allocated_bytes=28498976, leaked_bytes=0, leaked_blocks=0,
                        entries={"malloc": 600000}, file="ringgrow.c", module="/ringgrow",
                        caller=["churn"]),
}


def case_ringgrow(env, workroot):
    """A busy thread's ring grows from 8,192 to 32,768 slots once it has
    filled half of it 8 times (MEMVIZ_RING_GROW); the slots' positions
    change with the ring's size, so a growth that lost, repeated or
    reordered events would show in the exact counts or as frees of
    unknown blocks. Run growing after the first half ring, by default, and
    never."""
    cases = []
    for grow in ("1", None, "0"):
        name = "ringgrow-" + (grow or "default")
        with agent_env("MEMVIZ_RING_GROW", grow) if grow else contextlib.nullcontext():
            c = simple_case(env, workroot, name, "ringgrow", stdout=b"ringgrow: done\n",
                            process=dict(exe="ringgrow", status=0, how="return"),
                            summary={"unmatched_frees": 0, "mismatched_frees": 0, "threads": 2},
                            funcs=RINGGROW_FUNCS)
        cases.append(c)
    case = Case("ringgrow", workroot)
    case.check("ringgrow passes with rings grown early, by default and never",
               all(c.ok for c in cases), "see their checks above")
    return case


# sites.c: four stacks whose walks all start from one state (leaf's).
SITES_FUNCS = {
    "leaf": dict(allocations=80000, allocated_bytes=2240000, leaked_bytes=0, leaked_blocks=0,
                 entries={"malloc": 80000}, file="sites.c", module="/sites"),
    "path_a": dict(match="any", allocations=60000, allocated_bytes=1440000),
    "path_b": dict(match="any", allocations=20000, allocated_bytes=800000),
    "outer_x": dict(match="any", allocations=40000, allocated_bytes=1280000),
    "outer_y": dict(match="any", allocations=40000, allocated_bytes=960000),
}


def case_sites(env, workroot):
    """Walks remembered by the state they start from (unwind.c) tell
    stacks apart by the words further up: four stacks, one starting state,
    exact counts for each function on them."""
    return simple_case(env, workroot, "sites", "sites", stdout=b"sites: done\n",
                       process=dict(exe="sites", status=0, how="return"),
                       summary={"unmatched_frees": 0, "mismatched_frees": 0}, funcs=SITES_FUNCS)


def case_demo(env, workroot):
    case = Case("demo", workroot)
    trace = memviz_run(case, env, "demo")
    if trace:
        report_json(case, env, trace, "demo")
    return case


# ---------------------------------------------------------------------------
# Error handling


def case_run_missing(env, workroot):
    case = Case("run-missing-program", workroot)
    missing = os.path.join(case.dir, "no-such-program")
    rc, out, err, _ = run([env.memviz, "run", "-o", os.path.join(case.dir, "x.mvz"), "--", missing],
                          cwd=case.dir)
    case.eq("exit code", 127, rc)
    lines = err.decode("utf-8", "replace").strip().splitlines()
    case.check("one-line error on stderr starting 'memviz:'",
               len(lines) == 1 and lines[0].startswith("memviz:"), "stderr: %r" % err.decode("utf-8", "replace"))
    return case


def case_bad_flags(env, workroot):
    case = Case("bad-flag", workroot)
    for cmd in ([env.memviz, "--no-such-flag"],
                [env.memviz, "run", "--no-such-flag", "--", env.prog("churn")],
                [env.memviz, "report", "--no-such-flag", "x.mvz"]):
        rc, out, err, _ = run(cmd, cwd=case.dir)
        case.eq("%s exit code" % " ".join(cmd[1:3]).replace(env.prog("churn"), "churn"), 2, rc)
    case.check("nothing was run or written", not os.listdir(case.dir), "files: %s" % os.listdir(case.dir))
    return case


def bad_report(case, env, path, what, strict=True):
    """memviz report of a bad file: non-zero exit or a warning (strict), never a
    crash, with both builds (the ASan one must stay silent)."""
    builds = [("", env.memviz)] + ([("asan ", env.asan)] if env.asan else [])
    for label, binary in builds:
        for fmt in (["--json"], []):
            rc, out, err, _ = run([binary, "report"] + fmt + [path], timeout=REPORT_TIMEOUT)
            complaint = sanitizer_complaint(err) if label else None
            errs = err.decode("utf-8", "replace")
            ok = (rc is not None and rc >= 0 and not complaint
                  and (rc != 0 or "memviz:" in errs or not strict))
            if ok and rc == 0 and fmt:
                try:
                    json.loads(out.decode("utf-8"))
                except ValueError:
                    ok = False
                    errs = "exit 0 but stdout is not JSON; " + errs
            case.check("%sreport %s%s: %sno crash" % (label, " ".join(fmt) + " " if fmt else "", what,
                                                     "error or warning, " if strict else ""),
                       ok, "%s%s; stderr: %s" % (rc_str(rc), ", " + complaint if complaint else "", tail(errs, 400)))


def case_bad_traces(env, workroot):
    case = Case("bad-traces", workroot)
    d = case.dir
    rng = random.Random(20240521)
    bad_report(case, env, os.path.join(d, "does-not-exist.mvz"), "of a missing file")
    open(os.path.join(d, "empty.mvz"), "wb").close()
    bad_report(case, env, os.path.join(d, "empty.mvz"), "of an empty file")
    with open(os.path.join(d, "random.mvz"), "wb") as f:
        f.write(bytes(rng.randrange(256) for _ in range(65536)))
    bad_report(case, env, os.path.join(d, "random.mvz"), "of random bytes")
    with open(os.path.join(d, "magic.mvz"), "wb") as f:
        f.write(b"MVZTRACE" + bytes(rng.randrange(256) for _ in range(65536)))
    bad_report(case, env, os.path.join(d, "magic.mvz"), "of the magic and random bytes")
    os.mkdir(os.path.join(d, "a-directory.mvz"))
    bad_report(case, env, os.path.join(d, "a-directory.mvz"), "of a directory")

    # A real trace, cut in half / corrupted.
    rc, out, err, _ = run([env.memviz, "run", "-o", os.path.join(d, "good.mvz"), "--", env.prog("threads")], cwd=d)
    good = os.path.join(d, "good.mvz")
    if case.check("a real trace to damage", rc == 0 and os.path.isfile(good), rc_str(rc)):
        data = open(good, "rb").read()
        with open(os.path.join(d, "half.mvz"), "wb") as f:
            f.write(data[: len(data) // 2])
        bad_report(case, env, os.path.join(d, "half.mvz"), "of a trace cut at half its size")
        with open(os.path.join(d, "header.mvz"), "wb") as f:
            f.write(data[:16])
        bad_report(case, env, os.path.join(d, "header.mvz"), "of a trace with its header only")
        for n in range(3):
            buf = bytearray(data)
            for _ in range(1 + n * 8):
                i = rng.randrange(16, len(buf))
                buf[i] ^= 1 << rng.randrange(8)
            name = "flipped%d.mvz" % n
            with open(os.path.join(d, name), "wb") as f:
                f.write(bytes(buf))
            # A flipped bit may land where it changes nothing the reader checks:
            # only "no crash" is required here.
            bad_report(case, env, os.path.join(d, name), "of a trace with %d flipped bits" % (1 + n * 8),
                       strict=False)
    return case


# ---------------------------------------------------------------------------


CASES = [
    ("churn", case_churn),
    ("churn-default-output", case_churn_default_output),
    ("run-summary-no-replay", case_run_summary_no_replay),
    ("userns", case_userns),
    ("churn-nodebug", case_churn_nodebug),
    ("unwind-check", case_unwind_check),
    ("sigdispo", case_sigdispo),
    ("early", case_early),
    ("doublefree", case_doublefree),
    ("execfail", case_execfail),
    ("threadchurn", case_threadchurn),
    ("no-tsc", case_no_tsc),
    ("stack-ids-writer", case_stack_ids_writer),
    ("groups", case_groups),
    ("libunwind-only", case_libunwind_only),
    ("report-top", case_report_top),
    ("threads", case_threads),
    ("threads-stress", case_threads_stress),
    ("realloc", case_realloc),
    ("aligned", case_aligned),
    ("cxx", case_cxx),
    ("forkexec", case_forkexec),
    ("forkexec-no-follow", case_forkexec_nofollow),
    ("exec-only", case_exec_only),
    ("posix-spawn", case_posix_spawn),
    ("vfork-exec", lambda env, w: case_posix_spawn(env, w, "vfork")),
    ("dlopen", case_dlopen),
    ("lifecycle", case_lifecycle),
    ("stacks", case_stacks),
    ("stacks-rounds", case_stacks_rounds),
    ("threadexit", case_threadexit),
    ("fdchaos", case_fdchaos),
    ("recursion", case_recursion),
    ("recursion-depth50", case_recursion_depth),
    ("nofp", case_nofp),
    ("bigframe", case_bigframe),
    ("segv", case_segv),
    ("sigkill", case_sigkill),
] + [("exitpaths-" + m, (lambda m: lambda env, w: exitpaths_case(env, w, m))(m))
     for m in ("return", "exit", "_exit", "quick_exit", "abort")] + [
    ("sighandler", case_sighandler),
    ("ringgrow", case_ringgrow),
    ("sites", case_sites),
    ("demo", case_demo),
    ("run-missing-program", case_run_missing),
    ("bad-flag", case_bad_flags),
    ("bad-traces", case_bad_traces),
]


def load_case_modules():
    """CASES of every tests/integration/cases_*.py, in name order."""
    import importlib
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    cases = []
    for f in sorted(os.listdir(here)):
        if f.startswith("cases_") and f.endswith(".py"):
            cases += importlib.import_module(f[:-3]).CASES
    return cases


def main():
    CASES.extend(load_case_modules())
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memviz", default=os.path.join(REPO, "build/bin/memviz"))
    ap.add_argument("--asan-memviz", default=None, help="ASan/UBSan build of the CLI (reports only)")
    ap.add_argument("--programs", default=os.path.join(REPO, "build/tests/programs"))
    ap.add_argument("-k", dest="filter", default=None, help="run only cases whose name contains this")
    ap.add_argument("--keep", action="store_true", help="keep work directories of passing cases too")
    args = ap.parse_args()

    env = Env(args)
    problems = [p for p in [env.memviz, env.asan] if p and not os.access(p, os.X_OK)]
    if problems:
        print("run_tests.py: not executable: %s" % ", ".join(problems), file=sys.stderr)
        return 1
    os.makedirs(os.path.join(REPO, "tests", "work"), exist_ok=True)
    workroot = os.path.join(REPO, "tests", "work", "integration-%d" % os.getpid())
    os.makedirs(workroot)

    selected = [(n, f) for n, f in CASES if not args.filter or args.filter in n]
    if not selected:
        print("run_tests.py: no case matches %r" % args.filter, file=sys.stderr)
        return 1
    kept = []
    t0 = time.monotonic()
    for name, fn in selected:
        try:
            case = fn(env, workroot)
        except Exception as e:  # a harness problem must not hide the other cases
            import traceback
            traceback.print_exc()
            R.record("%s: harness error" % name, False, repr(e))
            kept.append(os.path.join(workroot, name))
            continue
        if case.ok and not args.keep:
            shutil.rmtree(case.dir, ignore_errors=True)
        else:
            kept.append(case.dir)
    if not kept:
        shutil.rmtree(workroot, ignore_errors=True)

    print()
    print("%d passed, %d failed (%d cases, %.1f s)" % (R.passed, len(R.failed), len(selected),
                                                       time.monotonic() - t0))
    if R.failed:
        print("failed checks:")
        for line in R.failed:
            print("  " + line)
    if kept:
        print("work directories kept: %s" % ", ".join(kept))
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
