"""Integration cases for the command line around the numbers: how `memviz
run` behaves as the process that service managers, scripts and terminals
deal with.

  run-signals-passed   SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2
                       sent to memviz run's pid reach the program, once
                       each; memviz run then prints the summary
  run-sigterm-default  SIGTERM to memviz run kills a program that keeps the
                       default disposition; memviz run says so, exits 143,
                       and the trace records the signal
  run-terminal-ctrl-c  ^C typed on the terminal reaches the program once,
                       not a second time through memviz run
  run-child-chdir      with a relative -o (and with MEMVIZ_OUTPUT by hand),
                       children that change directory first still write
                       their traces next to the first one, and the report
                       names them by absolute paths that open from anywhere
"""

import fcntl
import os
import signal
import subprocess
import termios
import time

import run_tests as rt

PASSED = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
          signal.SIGUSR2]
SIGPASS_SUMMARY = {"allocations": 8, "frees": 8, "allocated_bytes": 800, "peak_bytes": 800,
                   "leaked_bytes": 0, "leaked_blocks": 0}


def start_run(case, env, args, stdin=subprocess.DEVNULL, preexec=None):
    """Starts `memviz run -o DIR/sigpass.mvz -- sigpass ARGS` in a session of
    its own and waits for the program's "ready" line. Returns (Popen, trace)
    or (None, trace)."""
    trace = os.path.join(case.dir, "sigpass.mvz")
    cmd = [env.memviz, "run", "-o", trace, "--", env.prog("sigpass")] + list(args)
    p = subprocess.Popen(cmd, cwd=case.dir, stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec)
    line = p.stdout.readline()
    if not case.eq("the program started and said it is ready", b"sigpass: ready\n", line):
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, trace
    return p, trace


def finish(case, p, timeout=30):
    """(rc, rest of stdout, memviz lines, program lines) once p has exited."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        case.check("memviz run ended after the signal", False, "timeout")
        return None, out, [], []
    mv, prog = rt.split_stderr(err)
    case.last_run_summary = mv
    return p.returncode, out, mv, prog


def check_trace(case, env, trace, status=None, sig=None):
    rep = rt.report_json(case, env, trace, "sigpass")
    if rep is None:
        return
    rt.check_summary(case, rep, "sigpass", SIGPASS_SUMMARY)
    rt.check_process(case, rep, "sigpass", exe="sigpass", status=status, sig=sig,
                     how="signal" if sig else "return")


def case_signals_passed(env, workroot):
    case = rt.Case("run-signals-passed", workroot)
    p, trace = start_run(case, env, ["count", str(len(PASSED))])
    if not p:
        return case
    for s in PASSED:
        os.kill(p.pid, s)  # memviz run's pid, not the program's
        time.sleep(0.05)
    rc, out, mv, prog = finish(case, p)
    expect = b"".join(b"%s 1\n" % s.name.encode() for s in PASSED)
    case.eq("the program got each signal once", expect, out)
    case.eq("memviz run exits with the program's status", 3, rc)
    case.eq("program stderr (none)", [], prog)
    case.check("memviz run printed its summary", any("allocation calls" in l for l in mv),
               repr(mv))
    check_trace(case, env, trace, status=3)
    return case


def case_sigterm_default(env, workroot):
    case = rt.Case("run-sigterm-default", workroot)
    p, trace = start_run(case, env, ["default"])
    if not p:
        return case
    os.kill(p.pid, signal.SIGTERM)
    rc, out, mv, prog = finish(case, p)
    case.eq("memviz run exits 128 + SIGTERM", 128 + signal.SIGTERM, rc)
    case.check("memviz run says the program was killed by signal 15",
               any("killed by signal 15" in l for l in mv), repr(mv))
    case.check("memviz run printed its summary", any("allocation calls" in l for l in mv),
               repr(mv))
    check_trace(case, env, trace, sig=signal.SIGTERM)
    return case


def case_terminal_ctrl_c(env, workroot):
    """memviz run is the session leader of a pseudo-terminal, its process
    group (the program's too) the foreground one; a ^C written to the
    terminal is sent by the kernel to both, and memviz run must not pass it
    on a second time."""
    case = rt.Case("run-terminal-ctrl-c", workroot)
    master, slave = os.openpty()

    def take_terminal():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        p, trace = start_run(case, env, ["count", "1"], stdin=slave, preexec=take_terminal)
        if not p:
            return case
        lflag = termios.tcgetattr(slave)[3]
        case.check("the terminal generates signals (ISIG)", lflag & termios.ISIG, "lflag %#x" % lflag)
        # Two SIGINTs close together may merge into one in the program, so
        # what memviz run does is watched directly: it must not call kill.
        log = os.path.join(case.dir, "strace.log")
        tracer = subprocess.Popen(["strace", "-qq", "-e", "trace=kill,tgkill,tkill", "-o", log,
                                   "-p", str(p.pid)], stderr=subprocess.PIPE)
        time.sleep(0.5)  # attached by then
        os.write(master, b"\x03")
        rc, out, mv, prog = finish(case, p)
        tracer.wait(timeout=30)
    finally:
        os.close(slave)
        os.close(master)
    case.eq("the program got SIGINT once", b"SIGINT 1\n", out)
    calls = ([l for l in open(log).read().splitlines() if not l.startswith("---")]
             if os.path.exists(log) else None)
    case.eq("memviz run sent no signal of its own", [], calls)
    case.eq("memviz run exits with the program's status", 3, rc)
    check_trace(case, env, trace, status=3)
    return case


def check_children_found(case, env, trace, label, n):
    """The report of trace lists n children, by absolute paths of existing
    traces in the case's directory, each readable from /."""
    rep = rt.report_json(case, env, trace, label)
    if rep is None:
        return
    kids = rep.get("children") or []
    case.eq("%s: children listed" % label, n, len(kids))
    for k in kids:
        path = k.get("trace", "")
        case.check("%s: child trace path is absolute and exists" % label,
                   path.startswith("/") and os.path.isfile(path), path)
        case.eq("%s: child trace is in the first trace's directory" % label,
                os.path.realpath(case.dir), os.path.dirname(os.path.realpath(path)))
        rc, out, err, _ = rt.run([env.memviz, "report", "--json", path], cwd="/")
        case.eq("%s: the child's trace opens from /" % label, 0, rc)


def case_child_chdir(env, workroot):
    case = rt.Case("run-child-chdir", workroot)
    sub = os.path.join(case.dir, "sub")
    os.makedirs(sub, exist_ok=True)
    churn = env.prog("churn")
    # an exec'd image and a forked child, both after a cd
    script = "cd sub && %s >/dev/null && exec %s" % (churn, churn)
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", "t.mvz", "--", "sh", "-c", script],
                             cwd=case.dir)
    case.eq("run exit code", 0, rc)
    case.eq("no trace went into the directory the children moved to", [], os.listdir(sub))
    check_children_found(case, env, os.path.join(case.dir, "t.mvz"), "run", 2)
    # by hand: a relative MEMVIZ_OUTPUT, from the subdirectory
    environ = dict(os.environ, LD_PRELOAD=os.path.join(rt.REPO, "build/lib/libmemviz.so"),
                   MEMVIZ_OUTPUT="h.mvz")
    rc, out, err, _ = rt.run(["sh", "-c", "cd .. && exec %s" % churn], cwd=sub, env=environ)
    case.eq("preloaded run exit code", 0, rc)
    case.check("the first trace is where MEMVIZ_OUTPUT named it",
               os.path.isfile(os.path.join(sub, "h.mvz")), repr(sorted(os.listdir(sub))))
    rep = rt.report_json(case, env, os.path.join(sub, "h.mvz"), "preload")
    if rep is not None:
        kids = rep.get("children") or []
        case.eq("preload: one child listed", 1, len(kids))
        for k in kids:
            path = k.get("trace", "")
            case.check("preload: child trace is absolute, next to h.mvz",
                       path.startswith("/") and os.path.dirname(path) == os.path.realpath(sub)
                       and os.path.isfile(path), path)
    return case


CASES = [
    ("run-child-chdir", case_child_chdir),
    ("run-signals-passed", case_signals_passed),
    ("run-sigterm-default", case_sigterm_default),
    ("run-terminal-ctrl-c", case_terminal_ctrl_c),
]
