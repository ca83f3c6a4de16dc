"""Integration case for `memviz live`, the terminal view, driven through
tmux (send-keys, capture-pane) against `memviz run --live` serving stepper
(cases_live.py: after step i, 10 * i blocks live).

  live-tui-children  family: the view lists the parent and its children;
                   tab shows the next, with its own heap
  live-tui         two views, one joining late, both show the program's
                   heap, blocks and top site; space pauses the view (it
                   stays at 20 blocks while the program goes to 30); the
                   arrows move it a sample; space resumes behind the
                   program ("REPLAY"); end goes back to live; s takes a
                   snapshot with the token; q quits with status 0; without
                   a terminal or with a bad address: one line, an error
"""
import os
import re
import shutil
import subprocess
import time

import cases_live as cl
import run_tests as rt


class Tmux:
    def __init__(self, case, name):
        self.sock = os.path.join(case.dir, "tmux-" + name)
        self.name = name

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock] + list(args), capture_output=True,
                              timeout=20)

    def start(self, command, status_file):
        return self.tmux("new-session", "-d", "-s", self.name, "-x", "120", "-y", "40",
                         "%s; echo $? > %s" % (command, status_file)).returncode == 0

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.name).stdout.decode(errors="replace")

    def keys(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def wait_for(self, text, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            s = self.screen()
            if text in s:
                return s
            time.sleep(0.1)
        return self.screen()

    def kill(self):
        self.tmux("kill-server")


def case_tui(env, workroot):
    case = rt.Case("live-tui", workroot)
    if not case.check("tmux is installed (scripts/install-deps.sh)", shutil.which("tmux"), ""):
        return case
    live = cl.Live(case, env)
    if not case.check("memviz run --live listens", live.port, rt.tail(live.err)):
        live.finish()
        return case
    cmd = "%s live --token-file %s 127.0.0.1:%d" % (env.memviz, live.trace + ".token", live.port)
    a, b = Tmux(case, "a"), Tmux(case, "b")
    status = os.path.join(case.dir, "a.status")
    try:
        case.check("the first view starts", a.start(cmd, status), "")
        for _ in range(2):
            live.next_step()
        s = a.wait_for("in 20 blocks")
        case.check("live: the heap's 20 blocks, the top site step_alloc, [LIVE]",
                   "in 20 blocks" in s and "step_alloc" in s and "[LIVE]" in s, s)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            s = a.screen()
            if re.search(r"steps\s+2\b", s) and "step 2" in s.split("Log:")[-1]:
                break
            time.sleep(0.1)
        case.check("the program's instruments and log: the counter 'steps' at 2, the log's "
                   "'step 1' and 'step 2', a growth rate for the top site",
                   "Instruments:" in s and re.search(r"steps\s+2\b", s) and "Log:" in s
                   and "step 1" in s and "step 2" in s and "/s  step_alloc" in s, s)
        a.keys("Space")
        s = a.wait_for("[PAUSED]")
        live.next_step()
        cl.wait_metric(live, "memviz_heap_live_blocks", 30)
        time.sleep(0.5)
        s = a.screen()
        case.check("paused: the view stays at 20 blocks while the program has 30",
                   "[PAUSED]" in s and "in 20 blocks" in s, s)
        at = [l for l in s.splitlines() if l.startswith("[PAUSED] at ")]
        a.keys("Left")
        time.sleep(0.4)
        at2 = [l for l in a.screen().splitlines() if l.startswith("[PAUSED] at ")]
        t1 = float(at[0].split()[2]) if at else None
        t2 = float(at2[0].split()[2]) if at2 else None
        case.check("left: a sample (0.1 s) back", t1 is not None and t2 is not None
                   and abs((t1 - t2) - 0.1) < 1e-6, "%r %r" % (at, at2))
        a.keys("Space")
        s = a.wait_for("[REPLAY]", timeout=3)
        case.check("space again: the view moves on behind the program", "[REPLAY]" in s
                   and "behind the program" in s, s)
        a.keys("End")
        s = a.wait_for("in 30 blocks")
        case.check("end: back to live, 30 blocks", "[LIVE]" in s and "in 30 blocks" in s, s)
        case.check("a second view joins late", b.start(cmd, os.path.join(case.dir, "b.status")), "")
        s = b.wait_for("in 30 blocks")
        case.check("the late view shows the same heap and can look back before it joined",
                   "in 30 blocks" in s and "heap over the last" in s, s)
        a.keys("s")
        s = a.wait_for("snapshot \"command-1\"", timeout=40)
        case.check("s: a snapshot taken, with the token", "snapshot \"command-1\"" in s
                   and "taken" in s, s)
        s = a.wait_for('Snapshots: "command-1"')
        case.check("the view lists it, and the threads by live bytes",
                   'Snapshots: "command-1"' in s and "Threads (by live bytes):" in s, s)
        a.keys("q")
        end = time.monotonic() + 10
        while time.monotonic() < end and not os.path.exists(status):
            time.sleep(0.1)
        got = open(status).read().strip() if os.path.exists(status) else None
        case.eq("q: the view exits 0", "0", got)
    finally:
        a.kill()
        b.kill()
    case.eq("the program ran to its end", 0, live.finish())
    rc, out, err, _ = rt.run([env.memviz, "live", "127.0.0.1:%d" % live.port], stdin_data=b"")
    case.check("without a terminal: one line, exit 1", rc == 1 and b"a terminal is needed" in err,
               "%s %r" % (rc, err))
    rc, out, err, _ = rt.run([env.memviz, "live", "nohost"])
    case.check("a bad address: usage error", rc == 2 and b"expects [HOST:]PORT" in err,
               "%s %r" % (rc, err))
    return case


def case_tui_children(env, workroot):
    """family under --live: the view lists the three processes; tab shows
    the next one, a child, with its own heap."""
    case = rt.Case("live-tui-children", workroot)
    trace = os.path.join(case.dir, "family.mvz")
    proc = subprocess.Popen([env.memviz, "run", "--live", "127.0.0.1:0", "-o", trace, "--",
                             env.prog("family")], cwd=case.dir, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stderr.readline()
    m = re.search(rb"live at http://[0-9.]+:(\d+)/", line)
    ready = proc.stdout.readline() == b"ready\n"
    t = Tmux(case, "f")
    try:
        if case.check("the server listens, the children are ready", m and ready, repr(line)):
            t.start("%s live 127.0.0.1:%s" % (env.memviz, m.group(1).decode()),
                    os.path.join(case.dir, "f.status"))
            end = time.monotonic() + 15
            while time.monotonic() < end:  # the names come once each trace is read
                s = t.screen()
                pids = re.findall(r"(\d+) family", s)
                if len(set(pids)) == 3:
                    break
                time.sleep(0.1)
            case.check("the view lists the three processes", len(set(pids)) == 3, s)
            s = t.wait_for("in 5 blocks")
            case.check("first the parent: 5 blocks", "in 5 blocks" in s, s)
            t.keys("Tab")
            want = "[%s family]" % (pids[1] if len(pids) > 1 else "?")
            end = time.monotonic() + 10
            while time.monotonic() < end:
                s = t.screen()
                if want in s and ("in 10 blocks" in s or "in 20 blocks" in s):
                    break
                time.sleep(0.1)
            case.check("tab: the next process, a child with its own heap (10 or 20 blocks)",
                       want in s and ("in 10 blocks" in s or "in 20 blocks" in s), s)
            t.keys("q")
    finally:
        t.kill()
        try:
            proc.communicate(input=b"\n", timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    case.eq("the run ends, exit 0", 0, proc.returncode)
    return case


CASES = [
    ("live-tui", case_tui),
    ("live-tui-children", case_tui_children),
]
