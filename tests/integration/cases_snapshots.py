"""Integration cases for heap snapshots: the leak scan at exit and the
snapshots taken during a run, checked against programs whose heap graph is
known exactly and against Valgrind memcheck.

  snapshot-leak-kinds  leakkinds (one of each of memcheck's cases): the exit
                       snapshot's kinds, bytes and blocks are the known ones
                       and memcheck's on the same program; memviz report and
                       its JSON carry the same totals; the loss records add
                       up; a snapshot taken by the API while a block is held
                       only by a local variable finds it reachable
  snapshot-triggers    grower (a steady grower, a flat cache, one lost block
                       a round, its own SIGUSR1 handler): snapshots by
                       signal, every N ms and by `memviz snapshot PID`, each
                       complete and named, the lost bytes growing by the
                       round; the program's own signal is still its own
  snapshot-api         include/memviz.h: a registered root holds its
                       target, an ignored block (and what it alone holds)
                       counts as reachable; the stub library runs the
                       program unchanged without memviz; a page the kernel
                       merged into the agent's .bss is still scanned
  snapshot-heuristics  memcheck's four heuristics: interior pointers they
                       accept reach their blocks, as memcheck counts them
  snapshot-retain      retainer (a hash table, TLS, a stack slot, a block two
                       globals share): retained and reachable bytes of each
                       root and site to the byte, suspects, shortest paths
  snapshot-growth      grower with a snapshot every 200 ms: the steady grower
                       first, its blocks at each snapshot, the flat cache,
                       what holds most of each at exit
  snapshot-threads     mtsnap: snapshots while 64 threads churn (one blocks
                       every signal): every thread stopped, each worker's
                       block reachable through its own stack, nothing lost
  snapshot-fork        forksnap: 8 snapshots by the API while a thread forks
                       40 children (and two churn): each snapshot complete
                       and consistent, no deadlock, every child traced and
                       exited 0
  snapshot-errors      no snapshot, an unknown name, a process memviz run did
                       not start, bad pids and options: one line, exit 1 or 2
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import run_tests as rt

KINDS = ("definite", "indirect", "possible", "reachable")


def leaks_json(case, env, trace, label, extra=()):
    rc, out, err, _ = rt.run([env.memviz, "leaks", "--json", "--kinds", "all"] + list(extra)
                             + [trace], timeout=rt.REPORT_TIMEOUT)
    if not case.eq("%s: memviz leaks --json exits 0" % label, 0, rc):
        case.check("%s: stderr" % label, False, rt.tail(err))
        return None
    try:
        return json.loads(out.decode())
    except ValueError:
        case.check("%s: leaks JSON parses" % label, False, rt.tail(out))
        return None


def totals(doc):
    return {k: [(doc.get("leaks") or {}).get(k, {}).get("bytes"),
                (doc.get("leaks") or {}).get(k, {}).get("blocks")] for k in KINDS}


MEMCHECK_LINE = re.compile(rb"(definitely lost|indirectly lost|possibly lost|still reachable): "
                           rb"([0-9,]+) bytes in ([0-9,]+) blocks")


def memcheck_totals(case, prog, args=()):
    """memcheck's LEAK SUMMARY for prog, or None when valgrind is missing."""
    if shutil.which("valgrind") is None:
        case.check("valgrind is installed (scripts/install-deps.sh)", False, "")
        return None
    p = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all", prog]
                       + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    names = {b"definitely lost": "definite", b"indirectly lost": "indirect",
             b"possibly lost": "possible", b"still reachable": "reachable"}
    got = {k: [0, 0] for k in KINDS}
    for m in MEMCHECK_LINE.finditer(p.stderr):
        got[names[m.group(1)]] = [int(m.group(2).replace(b",", b"")),
                                  int(m.group(3).replace(b",", b""))]
    return got


def case_leak_kinds(env, workroot):
    case = rt.Case("snapshot-leak-kinds", workroot)
    trace = rt.memviz_run(case, env, "leakkinds", args=["mid"])
    if not trace:
        return case
    want = {"definite": [2400, 4], "indirect": [2900, 4], "possible": [1030, 2],
            "reachable": [620, 5]}
    doc = leaks_json(case, env, trace, "exit")
    if doc is None:
        return case
    case.eq("the exit snapshot's leak kinds are the known ones", want, totals(doc))
    mc = memcheck_totals(case, env.prog("leakkinds"))
    if mc is not None:
        case.eq("and memcheck's, on the same program", mc, totals(doc))
    snap = doc.get("snapshot") or {}
    case.eq("the exit snapshot: named, complete, 15 blocks, nothing unreadable",
            ["exit", "exit", True, 15, 0],
            [snap.get("name"), snap.get("trigger"), snap.get("complete"), snap.get("blocks"),
             snap.get("unreadable_bytes")])
    recs = doc.get("records") or []
    sums = {k: [0, 0, 0] for k in KINDS}
    for r in recs:
        s = sums[r.get("kind")]
        s[0] += r.get("bytes", 0)
        s[1] += r.get("blocks", 0)
        s[2] += r.get("indirect_bytes", 0)
    case.eq("loss records add up to the totals (definitely lost ones carry the indirect bytes)",
            {k: want[k] + [2900 if k == "definite" else 0] for k in KINDS}, sums)
    case.check("every record has its allocation stack, through must()",
               recs and all(any(f.get("function") == "must" for f in r.get("frames") or [])
                            for r in recs), repr(recs[:1])[:300])
    rep = rt.report_json(case, env, trace, "leakkinds")
    if rep is not None:
        case.eq("report --json: the same leaks object", doc.get("leaks"), rep.get("leaks"))
    rc, out, err, _ = rt.run([env.memviz, "report", trace])
    case.check("report: the leak scan line",
               b"leak scan:        2.34 KiB definitely lost, 2.83 KiB indirectly, 1.01 KiB "
               b"possibly; 620 B still reachable" in out, rt.tail(out))
    mid = leaks_json(case, env, trace, "mid", ["--snapshot", "mid"])
    if mid is not None:
        case.eq("mid: the block held only by a local variable is reachable (684 B in 6)",
                dict(want, reachable=[684, 6]), totals(mid))
        case.eq("mid: taken by the API", "api", (mid.get("snapshot") or {}).get("trigger"))
    rc, out, err, _ = rt.run([env.memviz, "leaks", trace])
    text = out.decode()
    case.check("text: memcheck's words and the first definitely lost record",
               "definitely lost  2.34 KiB in 4 block(s)" in text
               and "Definitely lost, by allocation stack:" in text
               and "direct," in text, rt.tail(out))
    return case


def case_heuristics(env, workroot):
    case = rt.Case("snapshot-heuristics", workroot)
    trace = rt.memviz_run(case, env, "heuristics")
    if not trace:
        return case
    doc = leaks_json(case, env, trace, "exit", ["--no-default-suppressions"])
    if doc is None:
        return case
    want = {"definite": [0, 0], "indirect": [0, 0], "possible": [64, 1], "reachable": [171, 4]}
    case.eq("interior pointers the heuristics accept reach their blocks; one they do not, "
            "possibly", want, totals(doc))
    via = (doc.get("leaks") or {}).get("reachable_via_heuristic") or {}
    case.eq("each heuristic, one block", {"stdstring": [35, 1], "length64": [48, 1],
                                          "newarray": [56, 1], "multipleinheritance": [32, 1]},
            {k: [v.get("bytes"), v.get("blocks")] for k, v in via.items()})
    mc = memcheck_totals(case, env.prog("heuristics"))
    if mc is not None:
        case.eq("and memcheck's, heuristics on (its default)", mc, totals(doc))
    return case


def retain_json(case, env, trace, label, extra=()):
    rc, out, err, _ = rt.run([env.memviz, "retain", "--json", "--top", "100"] + list(extra)
                             + [trace], timeout=rt.REPORT_TIMEOUT)
    if not case.eq("%s: memviz retain --json exits 0" % label, 0, rc):
        case.check("%s: stderr" % label, False, rt.tail(err))
        return None
    try:
        return json.loads(out.decode())
    except ValueError:
        case.check("%s: retain JSON parses" % label, False, rt.tail(out))
        return None


def root_table(doc):
    return {(r.get("kind"), r.get("name") if r.get("kind") == "global" else ""):
            [r.get("retained_bytes"), r.get("retained_blocks"), r.get("reachable_bytes")]
            for r in doc.get("roots") or []}


def case_retain(env, workroot):
    case = rt.Case("snapshot-retain", workroot)
    trace = rt.memviz_run(case, env, "retainer")
    if not trace:
        return case
    doc = retain_json(case, env, trace, "exit")
    if doc is None:
        return case
    roots = root_table(doc)
    case.eq("g_table retains its buckets, entries and keys: 6,912 bytes in 201 blocks",
            [6912, 201, 6912], roots.get(("global", "g_table")))
    case.eq("the TLS root retains its 200-byte block", [200, 1, 200], roots.get(("tls", "")))
    case.eq("a block two globals point to: each reaches it, neither retains it",
            [[0, 0, 400], [0, 0, 400]], [roots.get(("global", "g_a")), roots.get(("global", "g_b"))])
    case.eq("held by more than one root: 400 bytes", 400, doc.get("shared_bytes"))
    case.eq("nothing held only by a stack at exit", {"bytes": 0, "blocks": 0}, doc.get("suspects"))
    mid = retain_json(case, env, trace, "mid", ["--snapshot", "mid"])
    if mid is not None:
        case.eq("mid: a stack slot retains its 300-byte block", [300, 1, 300],
                root_table(mid).get(("stack", "")))
        case.eq("mid: and that block is a suspect (only a stack word holds it)",
                {"bytes": 300, "blocks": 1}, mid.get("suspects"))
        paths = [x.get("path") or [] for x in mid.get("sites") or []]
        frames = [p[1].get("from_frame") for p in paths
                  if len(p) == 2 and p[0].get("root") == "stack"]
        case.check("mid: the stack word lies in the frame of mid(), named with its line",
                   len(frames) == 1 and (frames[0] or "").startswith("mid (retainer.c:"),
                   repr(frames))
    site = retain_json(case, env, trace, "site", ["--site", "table_insert"])
    if site is not None:
        sites = site.get("sites") or []
        first = sites[0] if sites else {}
        case.eq("--site table_insert: the entries retain themselves and their keys",
                [6400, 200, 4800, 100], [first.get("retained_bytes"), first.get("retained_blocks"),
                                         first.get("shallow_bytes"), first.get("shallow_blocks")])
        path = first.get("path") or []
        case.check("its path starts at g_table and reaches an entry through the buckets",
                   len(path) == 3 and path[0].get("root") == "global"
                   and path[0].get("name") == "g_table" and path[2].get("site") == "must",
                   repr(path))
    rc, out, err, _ = rt.run([env.memviz, "retain", trace])
    case.check("text: the roots table names g_table",
               b"6.75 KiB in 201 block(s) retained, 6.75 KiB reachable  global g_table [retainer]"
               in out, rt.tail(out))
    rc, out, err, _ = rt.run([env.memviz, "retain", "--block", "0x1", trace])
    case.check("--block with no block there: one line, exit 1",
               rc == 1 and b"no live block at 0x1" in err, "%s %r" % (rc, err))
    retained_flame(case, env, trace, doc)
    return case


def retained_flame(case, env, trace, doc):
    """export --cost retained: the dominator tree as folded stacks; a root's
    lines sum to what it retains, a block sits under its dominators."""
    rc, out, err, _ = rt.run([env.memviz, "export", "--format", "collapsed", "--cost", "retained",
                              trace])
    if not case.check("export --cost retained (collapsed) exits 0", rc == 0, rt.tail(err)):
        return
    lines = [l.rsplit(" ", 1) for l in out.decode().splitlines()]
    under = {}
    for stack, v in lines:
        top = re.sub(r"thread \d+", "thread N", stack.split(";")[0])
        under[top] = under.get(top, 0) + int(v)
    case.eq("retained flame: g_table's frame is what it retains, the TLS block under the TLS, "
            "the block two globals hold under its own frame",
            {"global g_table [retainer]": 6912, "[held by more than one root]": 400,
             "tls of thread N": 200}, under)
    chain = [s.split(";") for s, _ in lines if "key_new" in s]
    case.check("a key sits under its entry, under the bucket array, under g_table",
               len(chain) == 1 and len(chain[0]) == 4 and "table_insert" in chain[0][2]
               and chain[0][3].startswith("key_new:"), repr(chain))
    rc, out, err, _ = rt.run([env.memviz, "export", "--format", "speedscope", "--cost", "retained",
                              trace])
    try:
        ss = json.loads(out.decode())
        prof = ss["profiles"][0]
        names = [f["name"] for f in ss["shared"]["frames"]]
        got = sorted((";".join(names[i] for i in smp), w)
                     for smp, w in zip(prof["samples"], prof["weights"]))
    except (ValueError, KeyError, IndexError, TypeError) as e:
        case.check("speedscope --cost retained parses", False, "%s: %s" % (e, rt.tail(out)))
        return
    case.eq("speedscope --cost retained: the same stacks and bytes as collapsed",
            sorted((s, int(v)) for s, v in lines), got)
    case.eq("speedscope: endValue is every live byte at exit", 6912 + 400 + 200,
            prof.get("endValue"))
    rc, out, err, _ = rt.run([env.memviz, "export", "--format", "pprof", "--cost", "retained", trace])
    case.check("--cost retained for pprof: a usage error", rc == 2 and b"collapsed and speedscope"
               in err, "%s %r" % (rc, err))


def site_with(doc, func):
    return next((s for s in doc.get("sites") or []
                 if any(f.get("function") == func for f in s.get("frames") or [])), None)


def case_growth(env, workroot):
    case = rt.Case("snapshot-growth", workroot)
    trace = rt.memviz_run(case, env, "grower", args=["40"], opts=["--snapshot-every", "200ms"],
                          stdout=b"grower: 0 SIGUSR1\n")
    if not trace:
        return case
    rc, out, err, _ = rt.run([env.memviz, "growth", "--json", "--top", "100", trace])
    case.eq("memviz growth --json exits 0", 0, rc)
    try:
        doc = json.loads(out.decode())
    except ValueError:
        case.check("growth JSON parses", False, rt.tail(out))
        return case
    snaps = doc.get("snapshots") or []
    case.check("four or more snapshots, in time order, the exit's last",
               len(snaps) >= 4 and snaps[-1].get("name") == "exit"
               and all(a["time_ns"] < b["time_ns"] for a, b in zip(snaps, snaps[1:])),
               repr(snaps))
    sites = doc.get("sites") or []
    grow, lose, cache = site_with(doc, "grow"), site_with(doc, "lose"), site_with(doc, "churn_cache")
    if not case.check("the three sites are there", grow and lose and cache, ""):
        return case
    case.eq("the steady grower comes first", grow, sites[0])
    gb = grow.get("live_blocks") or []
    case.check("it grew at every snapshot, 25 blocks a round, 1,000 at exit",
               grow.get("steady") and all(b % 25 == 0 for b in gb) and gb[-1] == 1000
               and all(x < y for x, y in zip(gb, gb[1:])), repr(gb))
    case.eq("its bytes are 100 a block", [100 * b for b in gb], grow.get("live_bytes"))
    lb = lose.get("live_blocks") or []
    case.check("the lost blocks grew too, one a round, 40 at exit",
               lose.get("steady") and lb[-1] == 40, repr(lb))
    cb = cache.get("live_bytes") or []
    case.check("the cache stays flat: at most 10 entries of 200 bytes, 10 at exit, not steady",
               not cache.get("steady") and all(b <= 2000 for b in cb) and cb[-1] == 2000, repr(cb))
    held = [(x.get("held_by") or {}) for x in (grow, lose, cache)]
    case.eq("held most by, at exit: the grower by kept's array (every block), the lost blocks by "
            "nothing, the cache by the global cache",
            [("block", 100000, 1000, "kept"), ("lost", 3080, 40, None), ("root", 2000, 10, "cache")],
            [(h.get("holder"), h.get("bytes"), h.get("blocks"),
              ((h.get("path") or [{}])[0]).get("name")) for h in held])
    rc, out, err, _ = rt.run([env.memviz, "growth", trace])
    case.check("text: the grower first, 'grew at every snapshot'",
               b"#1  +" in out and b"(grew at every snapshot)" in out.split(b"#2")[0]
               and b"grow  tests/programs/grower.c" in out.split(b"#2")[0], rt.tail(out))
    return case


def case_threads(env, workroot):
    case = rt.Case("snapshot-threads", workroot)
    trace = rt.memviz_run(case, env, "mtsnap")
    if not trace:
        return case
    for name in ("busy-1", "busy-2", "busy-3"):
        doc = leaks_json(case, env, trace, name, ["--snapshot", name, "--verify"])
        if doc is None:
            continue
        ver = doc.get("verify") or {}
        case.check("%s: every block of the snapshot is live, with its size and stack, in the "
                   "trace at the snapshot's moment" % name,
                   ver.get("blocks", 0) > 64 and ver.get("not_live_in_trace") == 0, repr(ver))
        snap = doc.get("snapshot") or {}
        case.eq("%s: complete, every other thread stopped (one blocks every signal)" % name,
                [True, 0], [snap.get("complete"), snap.get("threads_running")])
        t = totals(doc)
        case.check("%s: nothing lost while 64 threads churn; the 64 held blocks reachable"
                   % name, t["definite"] == [0, 0] and t["possible"] == [0, 0]
                   and t["reachable"][0] >= 64 * 4096, repr(t))
        ret = retain_json(case, env, trace, name, ["--snapshot", name])
        if ret is not None:
            stacks = [r for r in ret.get("roots") or [] if r.get("kind") == "stack"]
            case.check("%s: each worker's stack retains its own block" % name,
                       sum(1 for r in stacks if r.get("retained_bytes", 0) >= 4096) >= 64,
                       repr([(r.get("thread"), r.get("retained_bytes")) for r in stacks])[:300])
    return case


def case_fork(env, workroot):
    case = rt.Case("snapshot-fork", workroot)
    trace = rt.memviz_run(case, env, "forksnap", stdout=b"forksnap: 40 forks\n")
    if not trace:
        return case
    for k in range(1, 9):
        name = "fork-%d" % k
        doc = leaks_json(case, env, trace, name, ["--snapshot", name, "--verify"])
        if doc is None:
            continue
        snap, ver = doc.get("snapshot") or {}, doc.get("verify") or {}
        case.eq("%s (forks before, during and after it): complete, every thread stopped, every "
                "block live in the trace, g_kept reachable, nothing lost" % name,
                [True, 0, 0, True, [0, 0]],
                [snap.get("complete"), snap.get("threads_running"), ver.get("not_live_in_trace"),
                 totals(doc)["reachable"][0] >= 1000, totals(doc)["definite"]])
    rc, out, err, _ = rt.run([env.memviz, "report", "--children", "--json", trace])
    try:
        tree = json.loads(out.decode()).get("tree") or {}
    except ValueError:
        tree = {}
    kids = [i for i in tree.get("images") or [] if i.get("how") == "fork"]
    case.eq("40 forked children, each traced, each exited 0 by _exit, with its own block",
            [40] * 3, [len(kids), sum(1 for i in kids if i.get("exit") ==
                                      "exited with status 0 (via _exit)"),
                       sum(1 for i in kids if i.get("allocations") == 1)])
    return case


def program_pid(memviz_pid, timeout=5.0):
    """The pid of the program memviz run started (its only child)."""
    path = "/proc/%d/task/%d/children" % (memviz_pid, memviz_pid)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            kids = open(path).read().split()
        except OSError:
            return None
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    return None


def case_triggers(env, workroot):
    case = rt.Case("snapshot-triggers", workroot)
    trace = os.path.join(case.dir, "g.mvz")
    cmd = [env.memviz, "run", "-o", trace, "--snapshot-on", "USR2", "--snapshot-every", "200ms",
           "--", env.prog("grower"), "40"]
    p = subprocess.Popen(cmd, cwd=case.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    pid = program_pid(p.pid)
    if not case.check("the program started", pid, ""):
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return case
    time.sleep(0.3)
    os.kill(pid, signal.SIGUSR1)  # the program's own
    os.kill(pid, signal.SIGUSR2)  # memviz's
    rc, out, err, _ = rt.run([env.memviz, "snapshot", str(pid), "asked"])
    case.eq("memviz snapshot PID NAME exits 0", 0, rc)
    case.check("and says it was taken, with the pause",
               re.match(rb'memviz: snapshot "asked" of \d+ taken \(the program paused ', out),
               rt.tail(out) + rt.tail(err))
    rc, out, err, _ = rt.run([env.memviz, "snapshot", str(p.pid), "via-run"])
    case.check("memviz run's own pid means its program",
               rc == 0 and (b'snapshot "via-run" of %d taken' % pid) in out,
               rt.tail(out) + rt.tail(err))
    out, err = p.communicate(timeout=60)
    case.eq("run exit code", 0, p.returncode)
    case.eq("the program's own SIGUSR1 reached its handler, once", b"grower: 1 SIGUSR1\n", out)
    info = {}
    for name in ("every-1", "every-2", "every-3", "signal-1", "asked", "exit"):
        doc = leaks_json(case, env, trace, name, ["--snapshot", name, "--verify"])
        if doc:
            info[name] = doc
    case.eq("each snapshot agrees with the trace's events at its moment",
            {n: 0 for n in info}, {n: (d.get("verify") or {}).get("not_live_in_trace")
                                   for n, d in info.items()})
    case.eq("every snapshot is there and complete",
            ["every-1", "every-2", "every-3", "signal-1", "asked", "exit"],
            [n for n, d in info.items() if (d.get("snapshot") or {}).get("complete")])
    via = leaks_json(case, env, trace, "via-run", ["--snapshot", "via-run"])
    case.eq("the snapshot asked through memviz run's pid is there",
            "command", ((via or {}).get("snapshot") or {}).get("trigger"))
    case.eq("triggers", {"every-1": "every", "signal-1": "signal", "asked": "command",
                         "exit": "exit"},
            {n: (info.get(n, {}).get("snapshot") or {}).get("trigger")
             for n in ("every-1", "signal-1", "asked", "exit")})
    lost = [totals(info[n])["definite"] for n in ("every-1", "every-2", "every-3") if n in info]
    case.check("lost bytes grow: 77 B a round, a block a round",
               len(lost) == 3 and all(b == 77 * n and n > 0 for b, n in lost)
               and lost[0][1] < lost[1][1] < lost[2][1], repr(lost))
    if "exit" in info:
        case.eq("at exit: 40 rounds lost, 1,000 kept + the cache + the array",
                {"definite": [40 * 77, 40], "reachable": [1000 * 100 + 10 * 200 + 40 * 25 * 8,
                                                          1011]},
                {k: totals(info["exit"])[k] for k in ("definite", "reachable")})
    return case


def case_api(env, workroot):
    case = rt.Case("snapshot-api", workroot)
    rc, out, err, _ = rt.run([env.prog("apitest")])
    case.eq("without memviz, the stub library runs it unchanged", 0, rc)
    trace = rt.memviz_run(case, env, "apitest")
    if not trace:
        return case
    want = {"definite": [64, 1], "indirect": [0, 0], "possible": [0, 0], "reachable": [176, 3]}
    for name in ("api-1", "exit"):
        doc = leaks_json(case, env, trace, name, ["--snapshot", name])
        if doc:
            case.eq("%s: a registered root holds its target; an ignored block counts as "
                    "reachable, and what it holds" % name, want, totals(doc))
    after_agent_bss(case, env)
    return case


def after_agent_bss(case, env):
    """A root the kernel merged into the agent's .bss mapping (afterbss maps
    a page right after it; where ASLR put something else there, it says
    "taken" and runs again) is the program's: its block stays reachable."""
    for attempt in range(12):
        trace = os.path.join(case.dir, "afterbss%d.mvz" % attempt)
        rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", env.prog("afterbss")],
                                 cwd=case.dir)
        if out.strip() != b"taken":
            break
    if not case.check("afterbss: its page joined the agent's .bss mapping", out.strip() == b"merged",
                      "%r %s" % (out, rt.tail(err))):
        return
    doc = leaks_json(case, env, trace, "afterbss", [])
    if doc:
        case.eq("the block whose only pointer is in that page is still reachable, not lost",
                {"definite": [0, 0], "reachable_123": True},
                {"definite": totals(doc)["definite"],
                 "reachable_123": totals(doc)["reachable"][0] >= 123})


def case_errors(env, workroot):
    case = rt.Case("snapshot-errors", workroot)
    trace = rt.memviz_run(case, env, "leakkinds", opts=["--no-leak-scan"], trace_name="noscan")
    if trace:
        rc, out, err, _ = rt.run([env.memviz, "leaks", trace])
        case.check("no snapshot: one line, exit 1",
                   rc == 1 and err.count(b"\n") == 1 and b"has no heap snapshot" in err,
                   "%s %r" % (rc, err))
    trace = rt.memviz_run(case, env, "leakkinds")
    if trace:
        rc, out, err, _ = rt.run([env.memviz, "leaks", "--snapshot", "nosuch", trace])
        case.check("unknown name: says which there are",
                   rc == 1 and b"no complete snapshot named 'nosuch' (it has: exit)" in err,
                   "%s %r" % (rc, err))
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", os.path.join(case.dir, "sh.mvz"), "--",
                              "sh", "-c", "exec " + env.prog("leakkinds")], cwd=case.dir)
    rc, out, err, _ = rt.run([env.memviz, "leaks", os.path.join(case.dir, "sh.mvz")])
    case.check("an image that exec'd: says where its snapshot is",
               rc == 1 and b"replaced itself with exec(" in err and b"--children" in err,
               "%s %r" % (rc, err))
    sleeper = subprocess.Popen(["sleep", "5"])
    try:
        rc, out, err, _ = rt.run([env.memviz, "snapshot", str(sleeper.pid)])
        case.check("a process memviz run did not start: exit 1, says so",
                   rc == 1 and b"is not being traced by memviz run" in err, "%s %r" % (rc, err))
    finally:
        sleeper.kill()
        sleeper.wait()
    for args, what in ((["snapshot", "abc"], "not a process id"),
                       (["snapshot"], "expects a pid"),
                       (["run", "--snapshot-on", "KILL", "true"], "--snapshot-on needs"),
                       (["run", "--snapshot-every", "soon", "true"], "--snapshot-every needs"),
                       (["leaks", "--kinds", "lost", "x.mvz"], "--kinds takes")):
        rc, out, err, _ = rt.run([env.memviz] + args)
        case.check("%s: usage error" % " ".join(args),
                   rc == 2 and what.encode() in err.split(b"\n")[0], "%s %r" % (rc, err))
    return case


CASES = [
    ("snapshot-leak-kinds", case_leak_kinds),
    ("snapshot-triggers", case_triggers),
    ("snapshot-api", case_api),
    ("snapshot-heuristics", case_heuristics),
    ("snapshot-retain", case_retain),
    ("snapshot-growth", case_growth),
    ("snapshot-threads", case_threads),
    ("snapshot-fork", case_fork),
    ("snapshot-errors", case_errors),
]
