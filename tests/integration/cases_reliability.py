"""Integration cases for reliability: memviz never breaks the program it
profiles. Each case runs a program under `memviz run` (and, where the CLI
could hide a problem, with the agent preloaded by hand) in a hostile
situation, and checks that the program's own output and exit status are
unchanged, that memviz says clearly and once what it could not do, and that
whatever trace exists is readable with exact numbers.

  rel-unwritable    the trace path cannot be created
  rel-disk-full     the trace's file system fills up during the run (tmpfs)
  rel-dev-full      the trace is a full device (a mknod'ed /dev/full)
  rel-overflow      stack overflow, in main and in a thread (alternate stacks)
  rel-sigown        the program's own handlers; all signals blocked
  rel-lowmem        RLIMIT_AS so low that malloc fails
  rel-mtfork        fork and system() while threads allocate
  rel-tidreuse      thread ids reused (a pid namespace with a small pid_max)
  rel-exec          missing, non-executable, directory, script, static, setuid

The tmpfs mount, the device node and the pid namespace need root, as `make
test` has on the CI machine; without it these cases fail (they are not
skipped).
"""

import os
import shutil
import stat
import subprocess

import run_tests as rt


def memviz_lines(err):
    return [l for l in err.decode("utf-8", "replace").splitlines() if l.startswith("memviz:")]


def program_lines(err):
    return [l for l in err.decode("utf-8", "replace").splitlines() if not l.startswith("memviz:")]


def preload_env(trace):
    env = dict(os.environ)
    env["LD_PRELOAD"] = os.path.join(rt.REPO, "build", "lib", "libmemviz.so")
    env["MEMVIZ_OUTPUT"] = trace
    return env


def report(case, env, trace, label, expect_rc=0):
    """report --json with both builds (when given); returns the parsed report."""
    import json
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--all-sites", trace], timeout=rt.REPORT_TIMEOUT)
    case.eq("%s: report exit" % label, expect_rc, rc)
    if env.asan:
        arc, aout, aerr, _ = rt.run([env.asan, "report", "--json", "--all-sites", trace], timeout=rt.REPORT_TIMEOUT)
        case.check("%s: asan report clean, same result" % label,
                   arc == rc and aout == out and not rt.sanitizer_complaint(aerr),
                   "%s; %s" % (rt.rc_str(arc), rt.tail(aerr)))
    try:
        return json.loads(out.decode()) if rc == 0 else None
    except ValueError:
        case.check("%s: report is JSON" % label, False, rt.tail(out))
        return None


def by_function(rep):
    out = {}
    for s in (rep or {}).get("sites", []):
        fn = s["frames"][0]["function"] if s.get("frames") else "?"
        d = out.setdefault(fn, {"allocations": 0, "allocated_bytes": 0, "leaked_bytes": 0,
                                "temporary": 0})
        for k in d:
            d[k] += s.get(k, 0)
    return out


# ---------------------------------------------------------------------------


def case_unwritable(env, workroot):
    case = rt.Case("rel-unwritable", workroot)
    blocker = os.path.join(case.dir, "file")
    open(blocker, "w").close()
    trace = os.path.join(blocker, "x.mvz")  # a path under a regular file: ENOTDIR
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", env.prog("churn"), "--echo-stdin"],
                             cwd=case.dir, stdin_data=b"abc\n")
    case.eq("exit status of the program", 0, rc)
    case.eq("program stdout", b"stdin: abc\nchurn: done\n", out)
    case.eq("program stderr", ["churn: stderr check"], program_lines(err))
    mv = memviz_lines(err)
    case.check("one memviz line: cannot write, running untraced",
               len(mv) == 1 and "cannot write the trace" in mv[0] and "untraced" in mv[0], repr(mv))
    # The agent alone (no CLI) in the same situation.
    rc, out, err, _ = rt.run([env.prog("churn")], cwd=case.dir, env=preload_env(trace))
    case.eq("preloaded: exit status", 0, rc)
    case.eq("preloaded: program stdout", b"churn: done\n", out)
    mv = memviz_lines(err)
    case.check("preloaded: one memviz line saying the trace cannot be created",
               len(mv) == 1 and "cannot create the trace file" in mv[0] and "Not a directory" in mv[0],
               repr(mv))
    # A stale trace must never pass for this run's: the file is recreated first.
    stale = os.path.join(case.dir, "stale.mvz")
    rt.run([env.memviz, "run", "-o", stale, "--", env.prog("realloc")], cwd=case.dir)
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", stale, "--", env.prog("churn")], cwd=case.dir)
    rep = report(case, env, stale, "rerun over an old trace")
    case.check("the trace is the new run's", rep and rep["process"]["argv"][0].endswith("churn"),
               rep and repr(rep["process"]["argv"]))
    return case


def mount_tmpfs(case, path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return case.check("mount a %s tmpfs (needs root)" % size, r.returncode == 0, r.stdout.decode())


def case_disk_full(env, workroot):
    case = rt.Case("rel-disk-full", workroot)
    mnt = os.path.join(case.dir, "small")
    # Big enough for the first chunks (1 MiB of records each, compressed),
    # far too small for the run's (about 6 MB: varied sizes compress poorly).
    if not mount_tmpfs(case, mnt, "1536k"):
        return case
    try:
        trace = os.path.join(mnt, "x.mvz")
        rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", env.prog("threads"), "400000",
                                  "varied"], cwd=case.dir)
        case.eq("exit status of the program", 0, rc)
        case.eq("program stdout", b"threads: done\n", out)
        mv = memviz_lines(err)
        said = [l for l in mv if "cannot write the trace" in l]
        case.check("the agent says once that the rest is lost, and why",
                   len(said) == 1 and "No space left on device" in said[0] and "not recorded" in said[0],
                   repr(mv))
        case.check("memviz run says the trace ends early",
                   any("the trace ends early" in l for l in mv), repr(mv))
        rep = report(case, env, trace, "partial trace")
        if rep:
            case.check("the partial trace is marked damaged or incomplete",
                       not rep["process"]["complete"], repr(rep["process"]))
            case.check("some events were read", rep["summary"]["allocations"] > 0,
                       repr(rep["summary"]["allocations"]))
        os.unlink(trace)
        rc, out, err, _ = rt.run([env.prog("threads"), "400000", "varied"], cwd=case.dir,
                                 env=preload_env(trace))
        case.eq("preloaded: exit status", 0, rc)
        case.eq("preloaded: program stdout", b"threads: done\n", out)
        case.eq("preloaded: one memviz line", 1, len(memviz_lines(err)))
    finally:
        subprocess.run(["umount", mnt])
    return case


def case_dev_full(env, workroot):
    case = rt.Case("rel-dev-full", workroot)
    full = os.path.join(case.dir, "full")
    r = subprocess.run(["mknod", full, "c", "1", "7"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if not case.check("mknod a full device (needs root)", r.returncode == 0, r.stdout.decode()):
        return case
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", full, "--", env.prog("churn"), "--echo-stdin"],
                             cwd=case.dir, stdin_data=b"x\n")
    case.eq("exit status of the program", 0, rc)
    case.eq("program stdout", b"stdin: x\nchurn: done\n", out)
    case.eq("program stderr", ["churn: stderr check"], program_lines(err))
    mv = memviz_lines(err)
    case.check("the agent says why nothing is recorded (once)",
               len([l for l in mv if "cannot write the trace" in l and "No space left" in l]) == 1, repr(mv))
    case.check("memviz run says no trace was written", any("no trace" in l for l in mv), repr(mv))
    case.check("the device is still a device", stat.S_ISCHR(os.stat(full).st_mode), "")
    null = os.path.join(case.dir, "null")
    subprocess.run(["mknod", null, "c", "1", "3"])
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", null, "--", env.prog("churn")], cwd=case.dir)
    case.eq("to a null device: exit status", 0, rc)
    case.check("to a null device: the device survives", stat.S_ISCHR(os.stat(null).st_mode), "")
    return case


def case_overflow(env, workroot):
    case = rt.Case("rel-overflow", workroot)
    for mode, leaks in (("main", {"keep_some": 3000}), ("thread", {"keep_some": 3000, "keep_one": 500})):
        args = [] if mode == "main" else ["thread"]
        trace = os.path.join(case.dir, "%s.mvz" % mode)
        rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", env.prog("overflow")] + args,
                                 cwd=case.dir)
        case.eq("%s: memviz run exits like the shell would (128 + SIGSEGV)" % mode, 139, rc)
        bare = os.path.join(case.dir, "%s-bare.mvz" % mode)
        rc, out, err, _ = rt.run([env.prog("overflow")] + args, cwd=case.dir, env=preload_env(bare))
        case.eq("%s: preloaded, the program dies of SIGSEGV" % mode, -11, rc)
        for label, t in (("run", trace), ("preloaded", bare)):
            rep = report(case, env, t, "%s %s" % (mode, label))
            if not rep:
                continue
            p = rep["process"]
            case.eq("%s %s: the trace says SIGSEGV and is complete" % (mode, label),
                    [11, "signal", True], [p.get("exit_signal"), p.get("exit_how"), p.get("complete")])
            got = {fn: d["leaked_bytes"] for fn, d in by_function(rep).items() if fn in leaks}
            case.eq("%s %s: live at the crash" % (mode, label), leaks, got)
    return case


def run_both(case, env, prog, args, label):
    """The program plain and under memviz run: same stdout and status."""
    rc0, out0, err0, _ = rt.run([env.prog(prog)] + args, cwd=case.dir)
    trace = os.path.join(case.dir, "%s.mvz" % label)
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", env.prog(prog)] + args, cwd=case.dir)
    case.eq("%s: exit status as without memviz" % label, rc0, rc)
    case.eq("%s: stdout as without memviz" % label, out0, out)
    case.eq("%s: program stderr as without memviz" % label, program_lines(err0), program_lines(err))
    return trace, out, err


def case_sigown(env, workroot):
    case = rt.Case("rel-sigown", workroot)
    trace, out, _ = run_both(case, env, "sigown", [], "handlers")
    case.eq("handlers: every handler ran once and reads back as the program's", 
            b"usr1=1 usr2=1 pipe=1 write=EPIPE chld=1 segv=1 own=1\n", out)
    f = by_function(report(case, env, trace, "handlers"))
    case.eq("handlers: in_handlers", {"allocations": 5, "allocated_bytes": 500, "leaked_bytes": 500,
                                      "temporary": 0}, f.get("in_handlers"))
    trace, out, _ = run_both(case, env, "sigown", ["blockall"], "blockall")
    case.eq("blockall: signals still blocked at the end", b"still blocked: yes\n", out)
    rep = report(case, env, trace, "blockall")
    f = by_function(rep)
    case.eq("blockall: blocked_churn", {"allocations": 2000, "allocated_bytes": 128000, "leaked_bytes": 0,
                                        "temporary": 2000}, f.get("blocked_churn"))
    case.eq("blockall: blocked_leak", {"allocations": 4, "allocated_bytes": 128, "leaked_bytes": 128,
                                       "temporary": 0}, f.get("blocked_leak"))
    if rep:
        case.eq("blockall: complete, nothing lost", [True, 0], [rep["process"]["complete"],
                                                                rep["damage"]["lost_events"]])
    return case


def case_lowmem(env, workroot):
    case = rt.Case("rel-lowmem", workroot)
    trace = os.path.join(case.dir, "lowmem.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", env.prog("lowmem")], cwd=case.dir)
    case.eq("exit status", 0, rc)
    case.eq("stdout", b"lowmem: malloc failed after N blocks\n", out)
    n = [int(l.split()[1]) for l in program_lines(err) if l.startswith("lowmem: ")]
    if case.check("the program says how many blocks it got", len(n) == 1, repr(program_lines(err))):
        rep = report(case, env, trace, "lowmem")
        f = by_function(rep).get("fill_up", {})
        case.eq("fill_up: exactly the successful mallocs, all freed", [n[0], n[0] * 65536, 0],
                [f.get("allocations"), f.get("allocated_bytes"), f.get("leaked_bytes")])
    return case


def case_mtfork(env, workroot):
    case = rt.Case("rel-mtfork", workroot)
    trace, out, _ = run_both(case, env, "mtfork", [], "mtfork")
    case.eq("stdout", b"mtfork: ok\n", out)
    rep = report(case, env, trace, "parent")
    if not rep:
        return case
    f = by_function(rep)
    case.eq("parent: thread_churn", {"allocations": 40000, "allocated_bytes": 40000 * 48, "leaked_bytes": 0,
                                     "temporary": 40000}, f.get("thread_churn"))
    case.eq("parent: main_leak", 2468, f.get("main_leak", {}).get("leaked_bytes"))
    case.eq("parent: no lost or missing events", [0, 0], [rep["damage"]["lost_events"],
                                                          rep["damage"]["missing_events"]])
    kids = rep.get("children", [])
    forks = [c for c in kids if c["how"] == "fork"]
    case.eq("3 fork children and system()'s shell", [3, 1], [len(forks), len(kids) - len(forks)])
    for c in forks:
        t = c["trace"] if os.path.isabs(c["trace"]) else os.path.join(case.dir, c["trace"])
        crep = report(case, env, t, "child %d" % c["pid"])
        cw = by_function(crep).get("child_work", {})
        case.eq("child %d: child_work" % c["pid"], [10, 770], [cw.get("allocations"), cw.get("leaked_bytes")])
        if crep:
            case.eq("child %d: exited 0 via exit" % c["pid"], [0, "exit"],
                    [crep["process"].get("exit_status"), crep["process"].get("exit_how")])
    return case


def case_tidreuse(env, workroot):
    """Blocks outlive their thread and its id comes back for a new thread:
    the trace names blocks by thread id and serial, which must go on across
    the reuse (a name given twice shows as reused addresses and wrong leaks)."""
    case = rt.Case("rel-tidreuse", workroot)
    trace = os.path.join(case.dir, "tidreuse.mvz")
    # pid_max belongs to the pid namespace (Linux 6.14+); 310 is near its minimum
    script = "echo 310 > /proc/sys/kernel/pid_max && exec %s run -o %s -- %s" % (
        env.memviz, trace, env.prog("tidreuse"))
    rc, out, err, _ = rt.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script],
                             cwd=case.dir)
    case.eq("exit status", 0, rc)
    case.eq("stdout", b"tidreuse: done\n", out)
    said = [l.split() for l in program_lines(err) if l.startswith("tidreuse: reused")]
    if not case.check("the program reports its ids and leaks", len(said) == 1, repr(program_lines(err))):
        return case
    reused, leaked = int(said[0][2]), int(said[0][4])
    case.check("thread ids were reused", reused > 100, "%d of 1,000 threads had an earlier id" % reused)
    rep = report(case, env, trace, "tidreuse")
    if not rep:
        return case
    f = by_function(rep)
    case.eq("keep_block: 1,000 blocks, the even threads' leaked",
            {"allocations": 1000, "leaked_bytes": leaked, "temporary": 0},
            {k: f.get("keep_block", {}).get(k) for k in ("allocations", "leaked_bytes", "temporary")})
    case.eq("temp_block: 1,000 temporary allocations",
            {"allocations": 1000, "leaked_bytes": 0, "temporary": 1000},
            {k: f.get("temp_block", {}).get(k) for k in ("allocations", "leaked_bytes", "temporary")})
    case.eq("no damage (reused addresses would mean a block name given twice)",
            [0, 0, 0], [rep["damage"]["reused_addresses"], rep["damage"]["lost_events"],
                        rep["damage"]["unordered_events"]])
    return case


def case_exec(env, workroot):
    case = rt.Case("rel-exec", workroot)

    def one_line(label, args, want_rc, want_in, stdout=None):
        rc, out, err, _ = rt.run([env.memviz, "run"] + args, cwd=case.dir)
        case.eq("%s: exit status" % label, want_rc, rc)
        mv = memviz_lines(err)
        case.check("%s: one memviz line saying %r" % (label, want_in),
                   len(mv) == 1 and want_in in mv[0], repr(mv))
        if stdout is not None:
            case.eq("%s: stdout" % label, stdout, out)
        return out

    noexec = os.path.join(case.dir, "noexec.sh")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    one_line("not executable", ["--", noexec], 126, "Permission denied")
    one_line("a directory", ["--", case.dir], 126, "Permission denied")
    one_line("missing", ["--", os.path.join(case.dir, "nope")], 127, "No such file")
    one_line("static program", ["-o", "static.mvz", "--", env.prog("static_prog")], 5,
             "statically linked", stdout=b"static_prog: ran\n")
    case.check("static program: no trace file left behind",
               not os.path.exists(os.path.join(case.dir, "static.mvz")), "")
    # setuid to another user: the loader runs it in secure mode, without LD_PRELOAD
    suid = os.path.join(case.dir, "suid_churn")
    shutil.copy(env.prog("churn"), suid)
    os.chmod(case.dir, 0o755)
    r = subprocess.run(["chown", "nobody", suid], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if case.check("chown nobody (needs root)", r.returncode == 0, r.stdout.decode()):
        os.chmod(suid, 0o4755)
        one_line("setuid program", ["-o", "suid.mvz", "--", suid], 0, "setuid", stdout=b"churn: done\n")
    # A script: its interpreter is what runs, and it is traced.
    script = os.path.join(case.dir, "script.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho script says hi\nexit 4\n")
    os.chmod(script, 0o755)
    trace = os.path.join(case.dir, "script.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", script], cwd=case.dir)
    case.eq("script: exit status", 4, rc)
    case.eq("script: stdout", b"script says hi\n", out)
    rep = report(case, env, trace, "script")
    if rep:
        exe = os.path.basename(os.path.realpath(rep["process"]["exe"] or ""))
        case.check("script: the interpreter's process is traced, with allocations",
                   exe in ("sh", "dash", "bash") and rep["summary"]["allocations"] > 0,
                   "exe %r, %r allocations" % (rep["process"]["exe"], rep["summary"]["allocations"]))
        case.eq("script: its exit status is in the trace", 4, rep["process"].get("exit_status"))
    return case


def case_cuts(env, workroot):
    """A trace cut at 40 points and one from a future format version: every
    command gives a partial result or a one-line error, never a crash, and a
    cut trace never shows more than the whole one."""
    import json
    case = rt.Case("rel-cuts", workroot)
    good = os.path.join(case.dir, "good.mvz")
    rc, _, _, _ = rt.run([env.memviz, "run", "-o", good, "--", env.prog("threads"), "100000", "varied"],
                         cwd=case.dir)
    if not case.check("a multi-chunk trace to cut", rc == 0 and os.path.getsize(good) > 200000, rt.rc_str(rc)):
        return case
    data = open(good, "rb").read()
    full = report(case, env, good, "whole")
    prev_allocs, bad = 0, []
    for k in range(1, 41):
        n = len(data) * k // 41 + (k % 3) - 1  # near, at and past evenly spaced points
        cut = os.path.join(case.dir, "cut.mvz")
        with open(cut, "wb") as f:
            f.write(data[:n])
        rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--all-sites", cut], timeout=rt.REPORT_TIMEOUT)
        lines = err.decode().strip().splitlines()
        if rc not in (0, 1) or (rc == 1 and len(lines) != 1):
            bad.append((n, "report", rt.rc_str(rc), lines[:2]))
            continue
        if rc == 0:
            r = json.loads(out.decode())
            a = r["summary"]["allocations"]
            if a < prev_allocs or a > full["summary"]["allocations"] or r["process"]["complete"]:
                bad.append((n, "numbers", a, prev_allocs, r["process"]["complete"]))
            prev_allocs = a
        for fmt in ("collapsed", "pprof", "massif"):
            rc2, _, err2, _ = rt.run([env.memviz, "export", "--format", fmt, "-o", os.devnull, cut],
                                     timeout=rt.REPORT_TIMEOUT)
            if rc2 != rc:
                bad.append((n, fmt, rt.rc_str(rc2), err2.decode()[:200]))
        if env.asan and k % 8 == 0:
            arc, _, aerr, _ = rt.run([env.asan, "report", "--json", "--all-sites", cut], timeout=rt.REPORT_TIMEOUT)
            if arc != rc or rt.sanitizer_complaint(aerr):
                bad.append((n, "asan", rt.rc_str(arc), rt.tail(aerr, 300)))
    case.check("40 cuts: exit 0 with growing partial numbers, or 1 with one line; exports agree",
               not bad, repr(bad[:5]))
    case.check("the last cuts still count events", prev_allocs > 0, "")
    future = os.path.join(case.dir, "future.mvz")
    with open(future, "wb") as f:
        f.write(data[:8] + bytes([99, 0]) + data[10:])
    for cmd in (["report"], ["timeline"], ["export", "--format", "pprof", "-o", os.devnull]):
        rc, out, err, _ = rt.run([env.memviz] + cmd + [future])
        lines = err.decode().strip().splitlines()
        case.check("%s of a future format version: exit 1, one line naming the version" % cmd[0],
                   rc == 1 and len(lines) == 1 and "version 99" in lines[0], "%s %r" % (rt.rc_str(rc), lines))
    return case


CASES = [
    ("rel-cuts", case_cuts),
    ("rel-unwritable", case_unwritable),
    ("rel-disk-full", case_disk_full),
    ("rel-dev-full", case_dev_full),
    ("rel-overflow", case_overflow),
    ("rel-sigown", case_sigown),
    ("rel-lowmem", case_lowmem),
    ("rel-mtfork", case_mtfork),
    ("rel-tidreuse", case_tidreuse),
    ("rel-exec", case_exec),
]
