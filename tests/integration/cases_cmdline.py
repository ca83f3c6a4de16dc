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
  preload-foreign-allocator
                       an allocator preloaded before the agent takes the
                       program's malloc: the agent says so once on stderr,
                       in the trace, and the report says it; preloaded after
                       the agent, it changes nothing
  run-agent-lines      under memviz run the agent's lines go to memviz run's
                       stderr, not to the program's (here redirected to a
                       file), also when the program closed every descriptor
  report-edges         --top 0 prints the summary and no empty lists; --at
                       past the end of the run is an error, as --from is
  report-command-line  the command is printed so that a shell reads back the
                       same arguments; arguments beyond what the agent keeps
                       are counted as cut, never silently dropped
  report-depth-cap     the report says at what depth the trace was recorded,
                       and a stack cut there ends with a marker
  report-not-freed     blocks live at the end are "not freed" (at exit, or
                       when a trace without an exit record ends), never
                       "leaked": which of them were lost is for snapshots
  run-peak-rss-own     a process's peak RSS is its own, not that of the
                       biggest child it waited for
  report-json-top      report --json lists the sites of the text report's
                       lists (--top per list); --all-sites lists every site
  report-unknown-frames
                       a frame no symbol names is MODULE+0xOFFSET (its
                       return address in the module: the instruction before
                       it is a call), and says when the module's file changed
  report-debug-dir     separate debug files: found by build-id under
                       --debug-dir (a relative one too); a bad one is a
                       usage error
  run-child-chdir      with a relative -o (and with MEMVIZ_OUTPUT by hand),
                       children that change directory first still write
                       their traces next to the first one, and the report
                       names them by absolute paths that open from anywhere
"""

import fcntl
import os
import shlex
import shutil
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


TREE_LINE = rt.re.compile(r"^memviz: the whole tree: ([0-9,]+) process\(es\), ([0-9,]+) program "
                          r"image\(s\): ([0-9,]+) allocation calls, (.+) allocated, (.+) not freed "
                          r"at their ends in ([0-9,]+) block\(s\)$")


def check_tree_line(case, env, err, d):
    """memviz run's line of the whole tree's totals == the sums of the reports
    of every trace in d."""
    mv, _ = rt.split_stderr(err)
    m = next((m for m in map(TREE_LINE.match, mv) if m), None)
    if not case.check("memviz run prints the whole tree's totals", m, repr(mv)):
        return None
    sums, pids = dict(allocations=0, allocated_bytes=0, leaked_bytes=0, leaked_blocks=0), set()
    traces = sorted(f for f in os.listdir(d) if f.endswith(".mvz"))
    for f in traces:
        rep = rt.report_json(case, env, os.path.join(d, f), f)
        if rep is None:
            return None
        for k in sums:
            sums[k] += (rep.get("summary") or {}).get(k, 0)
        pids.add((rep.get("process") or {}).get("pid"))
    want = [format(len(pids), ","), format(len(traces), ","), format(sums["allocations"], ","),
            rt.fmt_bytes(sums["allocated_bytes"]), rt.fmt_bytes(sums["leaked_bytes"]),
            format(sums["leaked_blocks"], ",")]
    case.eq("the whole tree's totals == the sums over its traces' reports", want, list(m.groups()))
    return sums, traces


def check_children_report(case, env, trace, d, sums, traces):
    rc, out, err, _ = rt.run([env.memviz, "report", "--children", "--json", trace])
    try:
        tree = rt.json.loads(out.decode()).get("tree") or {}
    except ValueError:
        case.check("report --children --json: JSON", False, rt.tail(out))
        return
    images = tree.get("images") or []
    case.eq("report --children: one entry per trace", sorted(os.path.join(d, f) for f in traces),
            sorted(os.path.realpath(i.get("trace", "")) if not i.get("trace", "").startswith("/")
                   else i.get("trace") for i in images))
    case.eq("report --children: the tree's totals == the sums over its traces' reports",
            sums, {k: (tree.get("totals") or {}).get(k) for k in sums})
    case.eq("report --children: the root comes first, at depth 0", [0, "first"],
            [images[0].get("depth"), images[0].get("how")] if images else None)
    rc, out, err, _ = rt.run([env.memviz, "report", "--children", "--top", "0", trace])
    case.check("report --children: the text shows the tree and its totals",
               b"Process tree: %d traced image(s)" % len(traces) in out and b"tree totals:" in out,
               rt.tail(out))
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", d])
    try:
        tree = rt.json.loads(out.decode()).get("tree") or {}
    except ValueError:
        case.check("report DIR --json: JSON", False, rt.tail(out))
        return
    case.eq("report DIR: the same tree's totals", sums,
            {k: (tree.get("totals") or {}).get(k) for k in sums})
    case.eq("report DIR: one root, every trace", [1, len(traces)],
            [sum(1 for i in tree.get("images") or [] if i.get("depth") == 0),
             len(tree.get("images") or [])])


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
    got = check_tree_line(case, env, err, case.dir)
    if got:
        check_children_report(case, env, os.path.join(case.dir, "t.mvz"), case.dir, *got)
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


def case_foreign_allocator(env, workroot):
    case = rt.Case("preload-foreign-allocator", workroot)
    agent = os.path.join(rt.REPO, "build/lib/libmemviz.so")
    other = env.prog("libmvzalloc.so")
    for order, label in (([other, agent], "allocator first"), ([agent, other], "agent first")):
        trace = os.path.join(case.dir, label.replace(" ", "-") + ".mvz")
        environ = dict(os.environ, LD_PRELOAD=":".join(order), MEMVIZ_OUTPUT=trace)
        rc, out, err, _ = rt.run([env.prog("churn")], cwd=case.dir, env=environ)
        case.eq("%s: exit code" % label, 0, rc)
        case.eq("%s: program stdout" % label, b"churn: done\n", out)
        mv, prog = rt.split_stderr(err)
        rep = rt.report_json(case, env, trace, label)
        if label == "allocator first":
            case.check("%s: one line on stderr names the allocator" % label,
                       len(mv) == 1 and "the program's malloc is" in mv[0]
                       and "libmvzalloc.so" in mv[0], repr(mv))
            if rep is not None:
                notes = rep.get("notices") or []
                case.check("%s: the trace has the notice" % label,
                           len(notes) == 1 and notes[0].get("code") == "foreign_allocator"
                           and "libmvzalloc.so" in notes[0].get("text", ""), repr(notes))
                case.eq("%s: no allocation reached the agent" % label, 0,
                        (rep.get("summary") or {}).get("allocations"))
            rc, out, err, _ = rt.run([env.memviz, "report", trace])
            case.check("%s: the text report warns" % label,
                       b"warning: the program's malloc is" in out, rt.tail(out))
        else:
            case.eq("%s: nothing on stderr" % label, [], mv)
            if rep is not None:
                case.eq("%s: no notice" % label, [], rep.get("notices"))
                case.eq("%s: churn's allocations, exact" % label, 1158,
                        (rep.get("summary") or {}).get("allocations"))
    return case


AGENT_LINE_SCRIPT = r"""
import os, sys
churn, alloc, out, close_all = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
if close_all:
    os.closerange(3, 1 << 16)
fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.dup2(fd, 2)
env = dict(os.environ, LD_PRELOAD=alloc + ":" + os.environ["LD_PRELOAD"])
os.execve(churn, [churn], env)
"""


def case_agent_lines(env, workroot):
    """The exec'd churn runs with an allocator preloaded before the agent,
    so its agent has a line to say (the foreign allocator); the program's
    stderr is a file by then."""
    case = rt.Case("run-agent-lines", workroot)
    for close_all in ("0", "1"):
        label = "descriptors closed" if close_all == "1" else "descriptor inherited"
        prog_err = os.path.join(case.dir, "prog-err-%s.txt" % close_all)
        trace = os.path.join(case.dir, "t%s.mvz" % close_all)
        cmd = [env.memviz, "run", "-o", trace, "--", rt.sys.executable, "-c", AGENT_LINE_SCRIPT,
               env.prog("churn"), env.prog("libmvzalloc.so"), prog_err, close_all]
        rc, out, err, _ = rt.run(cmd, cwd=case.dir)
        case.eq("%s: run exit code" % label, 0, rc)
        mv, prog = rt.split_stderr(err)
        case.check("%s: the agent's line is on memviz run's stderr" % label,
                   any("the program's malloc is" in l for l in mv), repr(mv))
        written = open(prog_err).read() if os.path.exists(prog_err) else None
        case.eq("%s: the program's stderr has only its own line" % label,
                "churn: stderr check\n", written)
    return case




def case_report_edges(env, workroot):
    case = rt.Case("report-edges", workroot)
    trace = rt.memviz_run(case, env, "churn", stdout=b"churn: done\n",
                          stderr_lines=["churn: stderr check"])
    if not trace:
        return case
    rc, out, err, _ = rt.run([env.memviz, "report", "--top", "0", trace])
    case.eq("--top 0: exit 0", 0, rc)
    case.check("--top 0: the summary", b"allocation calls: 1,158" in out, rt.tail(out))
    case.check("--top 0: no lists, empty or not", b"Top sites" not in out and b"(none)" not in out,
               rt.tail(out))
    for opt in ("--at", "--from"):
        rc, out, err, _ = rt.run([env.memviz, "report", opt, "100", trace])
        lines = err.decode().splitlines()
        case.eq("%s past the end: exit 1" % opt, 1, rc)
        case.check("%s past the end: one line that says so" % opt,
                   len(lines) == 1 and "after the end of the run" in lines[0], repr(lines))
    return case


def case_command_line(env, workroot):
    case = rt.Case("report-command-line", workroot)
    true = shutil.which("true")
    odd = ["a b", "it's", "", "$HOME", "tab\there", "ok-plain_1.txt"]
    for label, args in (("quoted", odd), ("40,000 arguments", ["arg%d" % i for i in range(40000)])):
        trace = os.path.join(case.dir, "%s.mvz" % label.split()[0].replace(",", ""))
        rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", true] + args, cwd=case.dir)
        case.eq("%s: run exit code" % label, 0, rc)
        rep = rt.report_json(case, env, trace, label)
        rc, out, err, _ = rt.run([env.memviz, "report", "--top", "0", trace])
        line = next((l for l in out.decode().splitlines() if l.startswith("command:")), "")
        cmd = line[len("command:"):].strip()
        argv = [true] + args
        if label == "quoted":
            case.eq("%s: the printed command reads back as the arguments" % label, argv,
                    shlex.split(cmd))
            if rep is not None:
                case.eq("%s: argv_not_kept" % label, 0, rep["process"].get("argv_not_kept"))
            continue
        if rep is None:
            continue
        kept = rep["process"].get("argv") or []
        cut = rep["process"].get("argv_not_kept")
        case.check("%s: some arguments kept, the rest counted" % label,
                   0 < len(kept) < len(argv) and cut == len(argv) - len(kept),
                   "kept %d, not kept %r, of %d" % (len(kept), cut, len(argv)))
        case.eq("%s: the kept ones are the first ones" % label, argv[:len(kept)], kept)
        case.check("%s: the text report says how many were cut" % label,
                   cmd.endswith("[%s more arguments not kept]" % format(cut or 0, ",")),
                   cmd[-80:])
    return case


def case_depth_cap(env, workroot):
    case = rt.Case("report-depth-cap", workroot)
    for depth in (3, None):
        label = "--depth 3" if depth else "default depth"
        opts = ["--depth", str(depth)] if depth else []
        trace = rt.memviz_run(case, env, "churn", opts=opts, stdout=b"churn: done\n",
                              stderr_lines=["churn: stderr check"],
                              trace_name="churn-%s" % (depth or "default"))
        if not trace:
            continue
        rep = rt.report_json(case, env, trace, label)
        cap = depth or 256
        if rep is not None:
            case.eq("%s: process.depth_cap" % label, cap, rep["process"].get("depth_cap"))
            sites = rep.get("sites") or []
            wrong = [x["stack_id"] for x in sites
                     if x.get("cut_at_depth_cap") != (len(x.get("frames") or []) >= cap)]
            case.eq("%s: cut_at_depth_cap is set on the sites whose stacks reach it" % label,
                    [], wrong)
            case.check("%s: some site is cut exactly when the cap is 3" % label,
                       any(x.get("cut_at_depth_cap") for x in sites) == bool(depth), "")
        rc, out, err, _ = rt.run([env.memviz, "report", "--top", "1", trace])
        text = out.decode()
        case.check("%s: the summary gives the cap" % label,
                   "stack depth cap:  %d frames" % cap in text, rt.tail(out))
        case.eq("%s: a cut marker under each listed stack when cut" % label,
                4 if depth else 0, text.count("(cut at the depth cap, 3 frames"))
    return case




def case_not_freed_words(env, workroot):
    case = rt.Case("report-not-freed", workroot)
    trace = rt.memviz_run(case, env, "churn", stdout=b"churn: done\n",
                          stderr_lines=["churn: stderr check"])
    mv = getattr(case, "last_run_summary", [])
    case.check("run: says not freed at exit", any(" not freed at exit in " in l for l in mv), repr(mv))
    if trace:
        rc, out, err, _ = rt.run([env.memviz, "report", trace])
        t = out.decode()
        case.check("report: not freed, at exit",
                   "not freed:        4.75 KiB (4,861 bytes) in 27 block(s), at exit" in t,
                   rt.tail(out))
        # what was not freed is not called leaked; the leak scan's line says
        # what was lost, from the exit snapshot (churn keeps every block it
        # does not free in a global)
        rest = [l for l in t.splitlines() if not l.startswith("leak scan:")]
        case.check("report: no word of leaks for what was not freed",
                   all("leak" not in l.replace("leak_some", "") for l in rest), rt.tail(out))
        case.check("report: the leak scan finds nothing lost, all 4,861 bytes reachable",
                   "leak scan:        0 B definitely lost, 0 B indirectly, 0 B possibly; 4.75 KiB "
                   "still reachable (memviz leaks)" in t, rt.tail(out))
    # preloaded by hand and killed by SIGKILL: no exit record in the trace
    killed = os.path.join(case.dir, "killed.mvz")
    environ = dict(os.environ, LD_PRELOAD=os.path.join(rt.REPO, "build/lib/libmemviz.so"),
                   MEMVIZ_OUTPUT=killed)
    rc, out, err, _ = rt.run([env.prog("sigkill")], cwd=case.dir, env=environ)
    case.eq("sigkill: killed by SIGKILL", -9, rc)
    rc, out, err, _ = rt.run([env.memviz, "report", killed])
    case.check("report of a trace without exit: when the trace ends",
               b"block(s), when the trace ends (no exit recorded)" in out, rt.tail(out))
    return case


def case_peak_rss_own(env, workroot):
    case = rt.Case("run-peak-rss-own", workroot)
    trace = os.path.join(case.dir, "sh.mvz")
    big = "%s -c 'x = bytearray(200 << 20); x[::4096] = b\"1\" * len(x[::4096])'" % rt.sys.executable
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", "sh", "-c", big + "; true"],
                             cwd=case.dir)
    case.eq("run exit code", 0, rc)
    mv, prog = rt.split_stderr(err)
    case.last_run_summary = mv
    rep = rt.report_json(case, env, trace, "sh")
    if rep is None:
        return case
    own = (rep.get("summary") or {}).get("peak_rss_bytes") or 0
    case.check("sh's peak RSS is its own (under 64 MiB)", 0 < own < 64 << 20, "%d bytes" % own)
    kids = rep.get("children") or []
    if case.check("the python child has a trace", kids, repr(kids)):
        child = rt.report_json(case, env, kids[0]["trace"], "python")
        if child is not None:
            got = (child.get("summary") or {}).get("peak_rss_bytes") or 0
            case.check("the child's peak RSS is over 200 MiB", got >= 200 << 20, "%d bytes" % got)
    check_agent_share(case, env)
    return case


def check_agent_share(case, env):
    """How much of the peak RSS is memviz's own: python keeping a million
    strings (the agent's address table is tens of MiB) run plain and under
    memviz; the agent's share accounts for most of the difference and is
    not far above it (it is a bound: mapped, not all touched)."""
    # VmHWM, not wait4's ru_maxrss: a child forked from this harness keeps
    # the harness's high-water mark through exec
    cmd = [rt.sys.executable, "-c", "x = [str(i) * 3 for i in range(500000)]; "
           "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"]
    environ = dict(os.environ, PYTHONMALLOC="malloc")
    rc, out, err, _ = rt.run(cmd, env=environ)
    m = rt.re.search(rb"VmHWM:\s+(\d+) kB", out)
    plain = int(m.group(1)) * 1024 if m else 0
    trace = os.path.join(case.dir, "py.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--"] + cmd, env=environ)
    case.check("run summary: peak RSS and memviz's own share of it",
               rt.re.search(rb"peak RSS [^(]+ \(memviz's own: at most [0-9.]+ MiB of it\)", err),
               rt.tail(err))
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--top", "0", trace])
    try:
        s = rt.json.loads(out.decode()).get("summary") or {}
    except ValueError:
        case.check("python: report --json", False, rt.tail(out))
        return
    rss, agent = s.get("peak_rss_bytes", 0), s.get("peak_rss_agent_bytes", 0)
    added = rss - plain
    case.check("the agent's share covers most of what memviz added to the RSS, and is not far "
               "above it", agent >= added / 2 and agent <= added + (16 << 20) and agent < rss,
               "plain %d, under memviz %d, agent's share %d" % (plain, rss, agent))


def case_json_top(env, workroot):
    case = rt.Case("report-json-top", workroot)
    trace = rt.memviz_run(case, env, "churn", stdout=b"churn: done\n",
                          stderr_lines=["churn: stderr check"])
    if not trace:
        return case
    every = rt.report_json(case, env, trace, "all sites")
    if every is None:
        return case
    sites = every.get("sites") or []
    case.eq("--all-sites: every site", every.get("sites_total"), len(sites))
    for top, sort in ((1, None), (2, None), (1, "allocations")):
        costs = ([sort] if sort else ["peak", "leaked", "allocations", "temporary"])
        field = {"peak": "at_peak_bytes", "leaked": "leaked_bytes", "allocations": "allocations",
                 "temporary": "temporary"}
        want = set()
        for c in costs:
            ranked = sorted((x for x in sites if x.get(field[c])),
                            key=lambda x: (-x[field[c]], x["stack_id"]))
            want |= {x["stack_id"] for x in ranked[:top]}
        args = [env.memviz, "report", "--json", "--top", str(top)] + (["--sort", sort] if sort else [])
        rc, out, err, _ = rt.run(args + [trace])
        label = "--top %d%s" % (top, " --sort " + sort if sort else "")
        try:
            got = rt.json.loads(out.decode())
        except ValueError:
            case.check("%s: JSON" % label, False, rt.tail(out))
            continue
        ids = [x["stack_id"] for x in got.get("sites") or []]
        case.eq("%s: the sites of the text lists" % label, sorted(want), sorted(ids))
        case.eq("%s: sites_listed" % label, len(ids), got.get("sites_listed"))
        if top == 1:
            case.check("%s: fewer than every site" % label, len(ids) < len(sites), "%d" % len(ids))
    return case


UNKNOWN = rt.re.compile(r"^libp\.so\+0x([0-9a-f]+)( \(build-id differs from the file on disk\))?$")


def plugin_init_frame(rep):
    """The innermost frame of the site that made plugin_init's 1,000 bytes."""
    for site in rep.get("sites") or []:
        fr = site.get("frames") or []
        if site.get("allocated_bytes") == 1000 and fr and (fr[0].get("module") or "").endswith("/libp.so"):
            return fr[0]
    return None


def case_unknown_frames(env, workroot):
    case = rt.Case("report-unknown-frames", workroot)
    lib = os.path.join(case.dir, "libp.so")
    orig = os.path.join(case.dir, "libp.orig.so")
    # plugin_init is static: stripped, no symbol names it
    subprocess.run(["strip", "-o", lib, env.prog("libmvzplugin.so")], check=True)
    shutil.copy(lib, orig)
    trace = rt.memviz_run(case, env, "dlopen", args=[lib], stdout=None,
                          stderr_lines=lambda lines: True)
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "stripped")
    f = plugin_init_frame(rep or {})
    m = UNKNOWN.match((f or {}).get("function", ""))
    if not case.check("the stripped frame is libp.so+0xOFFSET", m and not m.group(2), repr(f)):
        return case
    off = int(m.group(1), 16)
    dis = subprocess.run(["objdump", "-d", "--start-address=%#x" % (off - 16),
                          "--stop-address=%#x" % off, orig], capture_output=True, text=True).stdout
    last = [l for l in dis.splitlines() if rt.re.match(r"^\s+[0-9a-f]+:\t", l)]
    case.check("the instruction before the offset is a call", last and "call" in last[-1],
               last[-1] if last else dis[-300:])
    # the file changes after the run: another build of the same source
    src = os.path.join(rt.REPO, "tests/programs/plugin/mvzplugin.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", lib, src], check=True)
    subprocess.run(["strip", lib], check=True)
    rep = rt.report_json(case, env, trace, "changed")
    f = plugin_init_frame(rep or {})
    m2 = UNKNOWN.match((f or {}).get("function", ""))
    case.check("after the file changed: the same offset, and the name says why",
               m2 and m2.group(1) == m.group(1) and m2.group(2), repr(f))
    return case


def case_debug_dir(env, workroot):
    case = rt.Case("report-debug-dir", workroot)
    exe = os.path.join(case.dir, "churn")
    shutil.copy(env.prog("churn"), exe)
    subprocess.run(["objcopy", "--only-keep-debug", exe, exe + ".debug"], check=True)
    subprocess.run(["strip", "--strip-debug", exe], check=True)
    notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True).stdout
    bid = rt.re.search(r"Build ID: ([0-9a-f]+)", notes)
    if not case.check("the program has a build-id", bid, notes[-300:]):
        return case
    bid = bid.group(1)
    os.makedirs(os.path.join(case.dir, "dbg", ".build-id", bid[:2]))
    shutil.move(exe + ".debug", os.path.join(case.dir, "dbg", ".build-id", bid[:2], bid[2:] + ".debug"))
    trace = os.path.join(case.dir, "t.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", exe], cwd=case.dir)
    case.eq("run exit code", 0, rc)

    def build_array_frame(args):
        rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--all-sites"] + args + [trace],
                                 cwd=case.dir)
        try:
            rep = rt.json.loads(out.decode())
        except ValueError:
            return None
        for site in rep.get("sites") or []:
            for f in site.get("frames") or []:
                if f.get("function") == "build_array":
                    return f
        return None

    f = build_array_frame([])
    case.check("without --debug-dir: the name, no source line",
               f and not f.get("file") and not f.get("line"), repr(f))
    f = build_array_frame(["--debug-dir", "dbg"])
    case.check("with --debug-dir (relative): its source line from the debug file",
               f and str(f.get("file", "")).endswith("churn.c") and f.get("line", 0) > 0, repr(f))
    rc, out, err, _ = rt.run([env.memviz, "report", "--debug-dir", "nope", trace], cwd=case.dir)
    case.eq("a --debug-dir that is not a directory: exit 2", 2, rc)
    return case


CASES = [
    ("report-debug-dir", case_debug_dir),
    ("report-unknown-frames", case_unknown_frames),
    ("report-json-top", case_json_top),
    ("run-peak-rss-own", case_peak_rss_own),
    ("report-not-freed", case_not_freed_words),
    ("report-depth-cap", case_depth_cap),
    ("report-command-line", case_command_line),
    ("report-edges", case_report_edges),
    ("run-agent-lines", case_agent_lines),
    ("preload-foreign-allocator", case_foreign_allocator),
    ("run-child-chdir", case_child_chdir),
    ("run-signals-passed", case_signals_passed),
    ("run-sigterm-default", case_sigterm_default),
    ("run-terminal-ctrl-c", case_terminal_ctrl_c),
]
