"""Integration cases for `memviz run --live` (docs/LIVE.md), on stepper: a
heap that grows in known steps at the test's pace (after step i: 10,000 *
i(i+1)/2 bytes in 10 * i blocks), everything freed at the end.

  live-clients     three clients join at different steps: each reads the
                   heap the program has at that step, exactly (metrics,
                   state, stream); samples that two clients both saw agree;
                   every sample's heap is one of the steps' and never goes
                   down before the end; a stream client killed mid-stream
                   leaves the program and the others unharmed; the top
                   site is step_alloc; the stream ends when the program does
  live-endpoints   /metrics passes `promtool check metrics` and a real
                   Prometheus scraping it on loopback answers a query with
                   the program's heap; `go tool pprof` reads
                   /debug/pprof/heap (inuse_space: the heap, in step_alloc);
                   the token: a snapshot needs it (401 without, taken with),
                   and on a non-loopback address every request needs it
  live-children    family (a parent and two forked children, held): every
                   process listed with its heap, a /metrics series each,
                   ?pid= picks one (404 for none, 400 when malformed), each
                   child's heap as its trace holds it
  live-period      POST /api/v1/period?ms=40 needs the token (401 on
                   loopback without it; 400 for a period out of 20-60000
                   ms): then the samples are 40 ms apart, those before
                   100 ms, none lost, the state says the period, and the
                   agent reads a polled value 25 times a second, not 10
  live-mode        modeswitch: POST /api/v1/mode needs the token (401;
                   400 for a bad size); ?sample=4k then ?sample=0 switch
                   the run to sampling and back: the state says so; the
                   blocks of the full part freed while sampling are
                   released at the right time (none at the peak, no
                   address reuse taken for a release), the leaks exact,
                   the sampled part's count an estimate within 5%, the
                   report lists the sections
  live-mode-threads  threads (8 threads churning) while a client flips the
                   mode every 30 ms: exit 0, the switches in the trace, no
                   release without its block, no address reuse, no event
                   lost, every churned block recorded released
  live-bounds      hammer (events as fast as one thread makes them): a
                   client that asks for the stream and never reads adds
                   no memory to memviz run (16 MiB at most); --live-window
                   2s keeps 2 s of samples
  live-asan        the same served by the ASan/UBSan build of the CLI, with
                   a stream cut off: no sanitizer report
  live-errors      a bad --live, a port in use (the program is not run), an
                   unknown endpoint, a wrong method: one line, an error
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import cases_export_stacks as es
import run_tests as rt


def heap_at(step):
    return 10000 * step * (step + 1) // 2


class Live:
    """memviz run --live ... -- stepper, driven step by step."""

    def __init__(self, case, env, addr="127.0.0.1:0", extra=(), memviz=None, penv=None,
                 prog="stepper", args=()):
        self.trace = os.path.join(case.dir, "%s%d.mvz" % (prog, int(time.time() * 1000 % 100000)))
        self.proc = subprocess.Popen(
            [memviz or env.memviz, "run", "--live", addr, "-o", self.trace] + list(extra)
            + ["--", env.prog(prog)] + list(args), cwd=case.dir, stdin=subprocess.PIPE,
            env=dict(os.environ, **(penv or {})),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.port, self.err = None, b""
        end = time.monotonic() + 10
        while time.monotonic() < end:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.err += line
            m = re.search(rb"live at http://[0-9.]+:(\d+)/", line)
            if m:
                self.port = int(m.group(1))
                break
        self.step = 0

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def token(self):
        with open(self.trace + ".token") as f:
            return f.read().strip()

    def next_step(self):
        """Lets the program take its next step; returns once it has."""
        if self.step:
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        self.step += 1
        return line == b"step %d\n" % self.step

    def finish(self):
        try:
            out, err = self.proc.communicate(input=b"\n" * 8, timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        self.err += err
        return self.proc.returncode


def fetch(url, token=None, method="GET", timeout=10):
    req = urllib.request.Request(url, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return None, str(e).encode()


def metric(text, name):
    m = re.search(r"^%s\{[^}]*\} (\d+)$" % name, text.decode(errors="replace"), re.M)
    return int(m.group(1)) if m else None


def wait_metric(live, name, want, timeout=10.0):
    """Polls /metrics until name equals want; the last value seen."""
    end, got = time.monotonic() + timeout, None
    while time.monotonic() < end:
        status, body = fetch(live.url("/metrics"))
        got = metric(body, name) if status == 200 else None
        if got == want:
            return got
        time.sleep(0.05)
    return got


def wait_info(live, name, want, timeout=10.0):
    """Polls /metrics until the info series of the string value name has
    want; that series (pid and program labels left out), or the last seen."""
    end, got = time.monotonic() + timeout, None
    pat = re.compile(r'^memviz_instrument_info\{pid="\d+",program="[^"]*",(name="%s",[^}]*)\} (\S+)$'
                     % re.escape(name), re.M)
    while time.monotonic() < end:
        status, body = fetch(live.url("/metrics"))
        m = pat.search(body.decode(errors="replace")) if status == 200 else None
        got = "memviz_instrument_info{%s} %s" % (m.group(1), m.group(2)) if m else None
        if got and 'value="%s"' % want in got:
            return got
        time.sleep(0.05)
    return got


def state(live):
    status, body = fetch(live.url("/api/v1/state"))
    try:
        return json.loads(body.decode()) if status == 200 else None
    except ValueError:
        return None


def samples_by_seq(doc):
    first = doc.get("first_seq", 0)
    return {first + i: s for i, s in enumerate(doc.get("samples") or [])}


class Stream:
    """A client of /api/v1/stream, in a curl process writing to a file."""

    def __init__(self, case, live, name):
        self.path = os.path.join(case.dir, name + ".ndjson")
        self.out = open(self.path, "wb")
        self.proc = subprocess.Popen(["curl", "-s", "-N", live.url("/api/v1/stream")],
                                     stdout=self.out)

    def lines(self):
        docs = []
        with open(self.path, "rb") as f:
            for line in f.read().split(b"\n"):
                if line.strip():
                    try:
                        docs.append(json.loads(line.decode()))
                    except ValueError:
                        docs.append(None)
        return docs

    def stop(self, kill=False):
        if kill:
            self.proc.send_signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()


def stream_samples(docs):
    seen = {}
    for d in docs:
        if d is None:
            continue
        if "memviz_live" in d:
            seen.update(samples_by_seq(d))
        elif "seq" in d:
            seen[d["seq"]] = d["sample"]
    return seen


def case_clients(env, workroot):
    case = rt.Case("live-clients", workroot)
    live = Live(case, env)
    if not case.check("memviz run --live prints where it listens", live.port, rt.tail(live.err)):
        live.finish()
        return case
    first = Stream(case, live, "first")  # joins before step 1
    killed = Stream(case, live, "killed")
    states = {}
    for step in range(1, 6):
        case.check("step %d taken" % step, live.next_step(), "")
        want = heap_at(step)
        got = wait_metric(live, "memviz_heap_live_bytes", want)
        case.eq("step %d: /metrics has the heap the program has" % step, want, got)
        case.eq("step %d: and its blocks" % step, 10 * step,
                metric(fetch(live.url("/metrics"))[1], "memviz_heap_live_blocks"))
        case.eq("step %d: the program's counter and value (memviz.h) as series" % step,
                [step, step], [wait_metric(live, "memviz_instrument_total", step),
                               wait_metric(live, "memviz_instrument_value", step)])
        case.eq("step %d: its string value as an info series" % step,
                'memviz_instrument_info{name="stage",value="step %d"} 1' % step,
                wait_info(live, "stage", "step %d" % step))
        case.eq("step %d: its tag's live blocks (each step's first block)" % step, step,
                wait_metric(live, "memviz_tag_live_blocks", step))
        if step > 1:
            case.eq("step %d: its stopwatch's sections (its waits so far)" % step, step - 1,
                    wait_metric(live, "memviz_stopwatch_sections_total", step - 1))
        if step == 2:
            killed.stop(kill=True)  # a client gone mid-stream
        if step in (3, 5):  # clients joining late see the same
            states[step] = state(live)
    late = Stream(case, live, "late")  # joins at the last step
    time.sleep(0.5)
    rc = live.finish()
    case.eq("the program ran to its end, exit 0, with clients joining and one killed", 0, rc)
    for s in (first, late):
        s.stop()
    docs = first.lines()
    case.check("the first stream: JSON lines, the state first, then updates",
               docs and None not in docs and "memviz_live" in docs[0]
               and all("seq" in d for d in docs[1:]), repr(docs[:2])[:300])
    seen = stream_samples(docs)
    heaps = [seen[k]["heap_bytes"] for k in sorted(seen)]
    steps = {heap_at(i) for i in range(0, 6)}
    case.check("every sample's heap is one of the steps'; it never goes down before the end",
               heaps and all(h in steps for h in heaps)
               and all(a <= b for a, b in zip(heaps, heaps[1:]) if b) and heaps[-1] in (0, heap_at(5)),
               repr(heaps)[:300])
    case.check("the stream saw every step", {heap_at(i) for i in range(1, 6)} <= set(heaps),
               repr(sorted(set(heaps))))
    for step, doc in states.items():
        if not case.check("the state at step %d parses" % step, doc, ""):
            continue
        mine = samples_by_seq(doc)
        common = set(mine) & set(seen)
        case.check("step %d: the late client's samples equal the first stream's (%d in common)"
                   % (step, len(common)), common and all(mine[k] == seen[k] for k in common), "")
        case.eq("step %d: the state's threads: the one thread, with the whole heap" % step,
                [heap_at(step)], [t.get("live_bytes") for t in doc.get("threads") or []])
        case.eq("step %d: the state has the program's log" % step,
                ["step %d" % i for i in range(1, step + 1)],
                [x.get("text") for x in doc.get("log") or []])
        case.eq("step %d: the state has the string value" % step, "step %d" % step,
                {i.get("name"): i.get("value") for i in doc.get("instruments") or []}.get("stage"))
        top = (doc.get("sites") or [{}])[0]
        case.eq("step %d: the top site is step_alloc, with the whole heap" % step,
                ["step_alloc", heap_at(step)],
                [(top.get("frames") or [{}])[0].get("function"), top.get("live_bytes")])
    late_docs = late.lines()
    case.check("a client that joined late also got the state, then updates, then the end",
               late_docs and "memviz_live" in (late_docs[0] or {}), repr(late_docs[:1])[:200])
    case.check("the stream says the run ended", any(d and d.get("ended") for d in docs),
               repr(docs[-1:])[:200])
    return case


def promtool(case, live):
    status, body = fetch(live.url("/metrics"))
    r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
    case.check("promtool check metrics: no problem", status == 200 and r.returncode == 0
               and not r.stdout.strip(), (r.stdout + r.stderr).decode()[:300])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def prometheus(case, live, want):
    """A real Prometheus scrapes the live server on loopback; its query API
    answers with the program's heap."""
    d = tempfile.mkdtemp(prefix="prom-", dir=case.dir)
    port = free_port()
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n"
                "scrape_configs:\n  - job_name: memviz\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % live.port)
    log = open(os.path.join(d, "log"), "wb")
    p = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(d, "prometheus.yml"),
                          "--storage.tsdb.path=" + os.path.join(d, "data"),
                          "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=log)
    got, end = None, time.monotonic() + 40
    try:
        while time.monotonic() < end and got != want:
            time.sleep(0.3)
            status, body = fetch("http://127.0.0.1:%d/api/v1/query?query=memviz_heap_live_bytes"
                                 % port, timeout=2)
            try:
                res = json.loads(body.decode())["data"]["result"]
                got = int(float(res[0]["value"][1])) if res else None
            except (ValueError, KeyError, IndexError, TypeError):
                pass
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()
    case.eq("Prometheus scraped /metrics: its query answers with the program's heap", want, got)


def pprof(case, live, want):
    genv = es.go_env(case)
    r = subprocess.run(["go", "tool", "pprof", "-raw", live.url("/debug/pprof/heap")], env=genv,
                       capture_output=True, timeout=60)
    text = r.stdout.decode(errors="replace")
    raw = es.parse_raw(case, text) if r.returncode == 0 else None
    if not case.check("go tool pprof reads the URL", raw, r.stderr.decode()[-300:]):
        return
    case.eq("pprof: sample types", ["alloc_objects/count", "alloc_space/bytes",
                                    "inuse_objects/count", "inuse_space/bytes[dflt]"], raw["types"])
    inuse = sum(v[3] for v, _ in raw["samples"])
    funcs = {raw["locations"][l][2][0][0] for v, locs in raw["samples"] if v[3] for l in locs[:1]}
    case.eq("pprof: inuse_space is the heap, all in step_alloc", [want, {"step_alloc"}],
            [inuse, funcs])


def tokens(case, env, live):
    status, _ = fetch(live.url("/api/v1/snapshot?name=nope"), method="POST")
    case.eq("POST /api/v1/snapshot without the token, on loopback: 401", 401, status)
    status, body = fetch(live.url("/api/v1/snapshot?name=live-1"), token=live.token(),
                         method="POST", timeout=40)
    case.check("with the token: the snapshot is taken", status == 200 and b'"live-1"' in body,
               "%s %r" % (status, body))
    status, _ = fetch(live.url("/metrics"))
    case.eq("reading needs no token on loopback", 200, status)
    end, names = time.monotonic() + 10, []
    while time.monotonic() < end and "live-1" not in names:
        names = [x.get("name") for x in (state(live) or {}).get("snapshots") or []]
        time.sleep(0.1)
    case.check("the state lists the snapshot taken", "live-1" in names, repr(names))


def case_endpoints(env, workroot):
    case = rt.Case("live-endpoints", workroot)
    live = Live(case, env)
    if not case.check("memviz run --live prints where it listens", live.port, rt.tail(live.err)):
        live.finish()
        return case
    for _ in range(3):
        live.next_step()
    want = heap_at(3)
    case.eq("step 3 reached /metrics", want, wait_metric(live, "memviz_heap_live_bytes", want))
    promtool(case, live)
    pprof(case, live, want)
    tokens(case, env, live)
    prometheus(case, live, want)
    case.eq("the program ran to its end", 0, live.finish())
    rc, out, err, _ = rt.run([env.memviz, "leaks", "--snapshot", "live-1", "--json", live.trace])
    case.check("the snapshot taken through the server is in the trace, with step 3's heap",
               rc == 0 and json.loads(out.decode())["leaks"]["reachable"]["bytes"] >= want,
               rt.tail(err))
    # another address than loopback: every request needs the token
    open_live = Live(case, env, addr="0.0.0.0:0")
    if case.check("--live 0.0.0.0:0 listens", open_live.port, rt.tail(open_live.err)):
        open_live.next_step()
        status, _ = fetch(open_live.url("/metrics"))
        case.eq("not on loopback: /metrics without the token is 401", 401, status)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            status, body = fetch(open_live.url("/metrics"), token=open_live.token())
            if status != 200 or metric(body, "memviz_heap_live_bytes") == heap_at(1):
                break
            time.sleep(0.05)
        case.check("with it, 200 and the metrics", status == 200
                   and metric(body, "memviz_heap_live_bytes") == heap_at(1), "%s %r" % (status, body))
        status, _ = fetch(open_live.url("/metrics"), token="0" * 32)
        case.eq("a wrong token is 401", 401, status)
        mode = os.stat(open_live.trace + ".token").st_mode & 0o777
        case.eq("the token file is its owner's alone", 0o600, mode)
    open_live.finish()
    return case


def case_errors(env, workroot):
    case = rt.Case("live-errors", workroot)
    for arg, want in (("abc", b"--live needs [HOST:]PORT"), ("127.0.0.1:99999", b"--live needs"),
                      ("::1:80", b"--live needs")):
        rc, out, err, _ = rt.run([env.memviz, "run", "--live", arg, "--", "true"], cwd=case.dir)
        case.check("--live %s: usage error" % arg, rc == 2 and want in err, "%s %r" % (rc, err))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    busy = s.getsockname()[1]
    marker = os.path.join(case.dir, "ran")
    rc, out, err, _ = rt.run([env.memviz, "run", "--live", "127.0.0.1:%d" % busy, "-o",
                              os.path.join(case.dir, "busy.mvz"), "--", "touch", marker],
                             cwd=case.dir)
    s.close()
    case.check("a port in use: one line, exit 1, the program not run",
               rc == 1 and b"cannot listen on 127.0.0.1:%d" % busy in err
               and not os.path.exists(marker), "%s %r" % (rc, err))
    rc, out, err, _ = rt.run([env.memviz, "run", "--live-window", "5m", "--", "true"])
    case.check("--live-window without --live: usage error", rc == 2, repr(err))
    live = Live(case, env)
    if live.port:
        live.next_step()
        status, body = fetch(live.url("/nope"))
        case.check("an unknown endpoint: 404, one line", status == 404 and body.count(b"\n") == 1,
                   "%s %r" % (status, body))
        status, body = fetch(live.url("/metrics"), method="DELETE")
        case.eq("a wrong method: 405", 405, status)
    case.eq("the program ran to its end", 0, live.finish())
    return case


def case_asan(env, workroot):
    """The ASan/UBSan build of the CLI serving: clients, a stream cut off,
    pprof, the end; no complaint from the sanitizers."""
    case = rt.Case("live-asan", workroot)
    if not env.asan:
        case.check("an ASan build of the CLI is given (make test gives one)", False,
                   "run with --asan-memviz")
        return case
    live = Live(case, env, memviz=env.asan)
    if case.check("the ASan CLI listens", live.port, rt.tail(live.err)):
        cut = Stream(case, live, "cut")
        for step in range(1, 4):
            live.next_step()
            case.eq("asan: step %d on /metrics" % step, heap_at(step),
                    wait_metric(live, "memviz_heap_live_bytes", heap_at(step)))
            if step == 2:
                cut.stop(kill=True)
        status, body = fetch(live.url("/debug/pprof/heap"))
        case.check("asan: /debug/pprof/heap is gzip", status == 200 and body[:2] == b"\x1f\x8b",
                   "%s" % status)
        state(live)
    rc = live.finish()
    case.check("asan: memviz run exits 0, no sanitizer report",
               rc == 0 and b"Sanitizer" not in live.err and b"runtime error" not in live.err,
               "%s %s" % (rc, rt.tail(live.err)))
    return case


def case_children(env, workroot):
    """family: a parent (5 blocks of 2,000 bytes) and two forked children
    (10 and 20 blocks of 1,000 bytes), held: the server lists the three
    processes, each with its heap, as its own trace holds it."""
    case = rt.Case("live-children", workroot)
    trace = os.path.join(case.dir, "family.mvz")
    proc = subprocess.Popen([env.memviz, "run", "--live", "127.0.0.1:0", "-o", trace, "--",
                             env.prog("family")], cwd=case.dir, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line, port = proc.stderr.readline(), None
    m = re.search(rb"live at http://[0-9.]+:(\d+)/", line)
    port = int(m.group(1)) if m else None
    ready = proc.stdout.readline() == b"ready\n"
    got, kids = None, []
    if case.check("the server listens and the children are ready", port and ready, repr(line)):
        url = "http://127.0.0.1:%d" % port
        end = time.monotonic() + 15
        while time.monotonic() < end:
            status, body = fetch(url + "/api/v1/processes")
            try:
                procs = json.loads(body.decode())["processes"]
            except (ValueError, KeyError):
                procs = []
            got = sorted((p["how"], p["heap_bytes"], p["heap_blocks"]) for p in procs)
            if got == [("first", 10000, 5), ("fork", 10000, 10), ("fork", 20000, 20)]:
                break
            time.sleep(0.1)
        case.eq("/api/v1/processes: the parent and its two children, each with its heap",
                [("first", 10000, 5), ("fork", 10000, 10), ("fork", 20000, 20)], got)
        kids = [p for p in procs if p["how"] == "fork"]
        status, body = fetch(url + "/metrics")
        series = re.findall(rb'^memviz_heap_live_bytes\{pid="(\d+)",program="family"\} (\d+)$', body,
                            re.M)
        case.eq("/metrics: a series per process", sorted([10000, 10000, 20000]),
                sorted(int(v) for _, v in series))
        big = next((k for k in kids if k["heap_bytes"] == 20000), None)
        if big:
            status, body = fetch(url + "/api/v1/state?pid=%d" % big["pid"])
            doc = json.loads(body.decode()) if status == 200 else {}
            top = (doc.get("sites") or [{}])[0]
            case.eq("?pid=CHILD: the child's state, its top site child_alloc",
                    [big["pid"], 20000, "child_alloc"],
                    [(doc.get("process") or {}).get("pid"), top.get("live_bytes"),
                     (top.get("frames") or [{}])[0].get("function")])
        case.eq("?pid= of no process of the run: 404", 404,
                fetch(url + "/api/v1/state?pid=999999")[0])
        case.eq("?pid=abc: 400", 400, fetch(url + "/api/v1/state?pid=abc")[0])
    try:
        out, err = proc.communicate(input=b"\n", timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    case.eq("the run ends, exit 0", 0, proc.returncode)
    for k in kids:
        path = k["trace"]
        rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--top", "0", path])
        leaked = json.loads(out.decode())["summary"]["leaked_bytes"] if rc == 0 else None
        case.eq("child %d: what the live view showed is what its trace leaves at its end"
                % k["pid"], k["heap_bytes"], leaked)
    return case


def run_hammer(case, env, name, secs, extra=(), stall=False):
    """memviz run --live ... -- hammer SECS; with stall, a client that asks
    for the stream and never reads. memviz run's own peak RSS (VmHWM) and
    the port."""
    trace = os.path.join(case.dir, name + ".mvz")
    proc = subprocess.Popen([env.memviz, "run", "--live", "127.0.0.1:0", "-o", trace] + list(extra)
                            + ["--", env.prog("hammer"), str(secs)], cwd=case.dir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stderr.readline()
    m = re.search(rb"live at http://[0-9.]+:(\d+)/", line)
    port = int(m.group(1)) if m else None
    sock = None
    if stall and port:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"GET /api/v1/stream HTTP/1.0\r\n\r\n")  # and never reads
    hwm, last_state = 0, None
    while proc.poll() is None:
        try:
            with open("/proc/%d/status" % proc.pid) as f:
                for l in f:
                    if l.startswith("VmHWM:"):
                        hwm = max(hwm, int(l.split()[1]) * 1024)
        except OSError:
            pass
        if port and not stall:
            status, body = fetch("http://127.0.0.1:%d/api/v1/state" % port, timeout=2)
            if status == 200:
                last_state = body
        time.sleep(0.2)
    out, err = proc.communicate()
    if sock:
        sock.close()
    return proc.returncode, hwm, last_state


def case_bounds(env, workroot):
    """A client that stops reading while the program allocates as fast as
    it can costs memviz run no more memory than without it; the window
    bounds the samples kept."""
    case = rt.Case("live-bounds", workroot)
    rc1, plain, _ = run_hammer(case, env, "plain", 3)
    rc2, stalled, _ = run_hammer(case, env, "stalled", 3, stall=True)
    case.eq("both runs exit 0", [0, 0], [rc1, rc2])
    case.check("a stalled client adds at most 16 MiB to memviz run's peak RSS (without: %d MiB, "
               "with: %d MiB)" % (plain >> 20, stalled >> 20),
               plain and stalled and stalled <= plain + (16 << 20), "")
    rc, _, body = run_hammer(case, env, "window", 4, extra=["--live-window", "2s"])
    try:
        doc = json.loads(body.decode()) if body else {}
    except ValueError:
        doc = {}
    t = [x["t_ns"] for x in doc.get("samples") or []]
    case.check("--live-window 2s: at most 21 samples kept, spanning at most 2 s, late in the run",
               rc == 0 and 0 < len(t) <= 21 and t[-1] - t[0] <= 2 * 10**9 and t[-1] >= 2 * 10**9,
               "%d samples %r" % (len(t), t[:1] + t[-1:]))
    return case


def refuses(case, live, path, good, bads):
    """A POST that changes the run: 401 without the token on loopback, even
    with a good value; 400 and one line for each bad one."""
    status, _ = fetch(live.url(path + good), method="POST")
    case.eq("POST %s%s without the token, on loopback: 401" % (path, good), 401, status)
    for bad in bads:
        status, body = fetch(live.url(path + bad), token=live.token(), method="POST")
        case.check("%s%s: 400, one line" % (path, bad), status == 400 and body.count(b"\n") <= 1,
                   "%s %r" % (status, body))


def named_metric(text, family, name):
    m = re.search(r'^%s\{[^}]*name="%s"[^}]*\} (\d+)$' % (family, re.escape(name)),
                  text.decode(errors="replace"), re.M)
    return int(m.group(1)) if m else None


def poll_rate(live, secs=1.0):
    """How many times a second the agent read stepper's polled value, over secs."""
    def polls():
        status, body = fetch(live.url("/metrics"))
        return named_metric(body, "memviz_instrument_value", "polls") if status == 200 else None
    a, t0 = polls(), time.monotonic()
    time.sleep(secs)
    b, t1 = polls(), time.monotonic()
    return None if a is None or b is None else (b - a) / (t1 - t0)


def case_period(env, workroot):
    case = rt.Case("live-period", workroot)
    live = Live(case, env, penv={"STEPPER_POLL": "1"})
    if not case.check("memviz run --live prints where it listens", live.port, rt.tail(live.err)):
        live.finish()
        return case
    case.check("step 1 taken", live.next_step(), "")
    time.sleep(0.5)
    before = state(live) or {}
    case.eq("the period at first: 100 ms", 100000000, before.get("period_ns"))
    samples = samples_by_seq(before)
    poller_heap = samples[max(samples)]["heap_bytes"] - heap_at(1) if samples else 0
    url = live.url("/api/v1/period?ms=40")
    refuses(case, live, "/api/v1/period?ms=", "40", ("5", "70000", "abc", ""))
    rate_before = poll_rate(live)
    status, body = fetch(url, token=live.token(), method="POST")
    case.check("with the token: 200", status == 200 and b"40 ms" in body, "%s %r" % (status, body))
    time.sleep(0.3)
    rate_after = poll_rate(live)
    case.check("the agent reads the program's polled value more often: about 25 times a "
               "second, not 10", rate_before and rate_after and rate_before < 13
               and rate_after > 18, "%s -> %s reads a second" % (rate_before, rate_after))
    case.check("step 2 taken", live.next_step(), "")
    time.sleep(0.5)
    after = state(live) or {}
    case.eq("the state says the new period", 40000000, after.get("period_ns"))
    got = samples_by_seq(after)
    seqs = sorted(got)
    ts = [got[k]["t_ns"] for k in seqs]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    case.check("the samples are contiguous: 100 ms apart, then 40 ms apart (at least 20)",
               seqs == list(range(seqs[0], seqs[-1] + 1)) if seqs else False, repr(seqs[:5]))
    tail = gaps[-20:]
    case.check("the last 20 samples are 40 ms apart, the first ones 100 ms",
               len(gaps) > 25 and all(g == 40000000 for g in tail)
               and gaps[0] == 100000000 and set(gaps) <= {40000000, 100000000}
               and gaps == sorted(gaps, reverse=True), repr(gaps))
    case.eq("step 2's heap in the last sample (and the poller thread's few blocks)",
            heap_at(2), got[seqs[-1]].get("heap_bytes") - poller_heap if seqs else None)
    rc = live.finish()
    case.eq("the program ran to its end, exit 0", 0, rc)
    return case


def wait_state(live, key, want, timeout=10.0):
    """Polls the state until key equals want; the last value seen."""
    end, got = time.monotonic() + timeout, None
    while time.monotonic() < end:
        got = (state(live) or {}).get(key)
        if got == want:
            return got
        time.sleep(0.05)
    return got


def case_mode(env, workroot):
    case = rt.Case("live-mode", workroot)
    live = Live(case, env, prog="modeswitch", penv={"MEMVIZ_SAMPLE_SEED": "7"})
    if not case.check("memviz run --live prints where it listens", live.port, rt.tail(live.err)):
        live.finish()
        return case
    case.eq("step a: 1,000 blocks kept, every allocation recorded", b"a\n",
            live.proc.stdout.readline())
    refuses(case, live, "/api/v1/mode?sample=", "4096", ("abc", "", "4x", "2048g"))
    status, body = fetch(live.url("/api/v1/mode?sample=4k"), token=live.token(), method="POST")
    case.check("?sample=4k with the token: 200", status == 200 and b"4096 bytes" in body,
               "%s %r" % (status, body))
    case.eq("the state says the run samples now", 4096, wait_state(live, "sample_now", 4096))
    live.proc.stdin.write(b"\n")
    live.proc.stdin.flush()
    case.eq("step b: the 1,000 freed, 200,000 allocated, 100,000 kept (sampled)", b"b\n",
            live.proc.stdout.readline())
    status, body = fetch(live.url("/api/v1/mode?sample=0"), token=live.token(), method="POST")
    case.check("?sample=0: 200, every allocation again", status == 200 and b"every" in body,
               "%s %r" % (status, body))
    case.eq("the state says every allocation is recorded now", 0,
            wait_state(live, "sample_now", 0))
    case.eq("and that the run was sampled (its numbers are estimates)", 4096,
            (state(live) or {}).get("sample_bytes"))
    rc = live.finish()
    case.eq("the program ran to its end, exit 0", 0, rc)
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", live.trace])
    doc = json.loads(out.decode()) if rc == 0 else {}
    summ, smp = doc.get("summary") or {}, doc.get("sampling") or {}
    case.eq("leaked: exactly step c's 500 blocks of 200 bytes (the 1,000 of step a were freed "
            "while sampling, and the 100,000 sampled ones after)", [100000, 500],
            [summ.get("leaked_bytes"), summ.get("leaked_blocks")])
    sites = {(s.get("frames") or [{}])[0].get("line"): s for s in doc.get("sites") or []}
    a_site = [s for s in sites.values() if s.get("allocations") == 1000]
    case.check("step a's blocks are gone at the peak (in step b): their releases were recorded, "
               "no address taken for a release", a_site and a_site[0].get("at_peak_blocks") == 0
               and (doc.get("damage") or {}).get("reused_addresses") == 0
               and summ.get("unmatched_frees") == 0, repr([a_site[:1], doc.get("damage")])[:400])
    truth = 1000 + 200000 + 500
    case.check("allocations: an estimate within 5%% of the %d made" % truth,
               abs((summ.get("allocations") or 0) - truth) < 0.05 * truth, repr(summ)[:200])
    secs = smp.get("sections") or []
    case.check("sampling sections: every allocation, then one in 4096 bytes, then every one",
               [s.get("mean_bytes") for s in secs] == [0, 4096, 0]
               and secs[0]["from_ns"] < secs[1]["from_ns"] < secs[2]["from_ns"], repr(secs))
    rc, out, err, _ = rt.run([env.memviz, "report", live.trace])
    case.check("the text report says which parts were sampled",
               rc == 0 and re.search(rb"^sampling: +every allocation from the start; one in "
                                     rb"4\.00 KiB from .*; every allocation from ", out, re.M),
               rt.tail(out))
    return case


def case_mode_threads(env, workroot):
    case = rt.Case("live-mode-threads", workroot)
    live = Live(case, env, prog="threads", args=("1500000",), penv={"MEMVIZ_SAMPLE_SEED": "3"})
    if not case.check("memviz run --live prints where it listens", live.port, rt.tail(live.err)):
        live.finish()
        return case
    flips = 0
    while live.proc.poll() is None and flips < 400:  # the mode flips every 30 ms while it runs
        fetch(live.url("/api/v1/mode?sample=%s" % ("16k" if flips % 2 == 0 else "0")),
              token=live.token(), method="POST")
        flips += 1
        time.sleep(0.03)
    rc = live.finish()
    case.eq("8 threads churning while the mode flips: the program ends, exit 0", 0, rc)
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", live.trace])
    doc = json.loads(out.decode()) if rc == 0 else {}
    secs = (doc.get("sampling") or {}).get("sections") or []
    case.check("the trace has the switches (at least 3 sections)", len(secs) >= 3,
               "%d flips, sections %r" % (flips, secs[:6]))
    summ, dmg = doc.get("summary") or {}, doc.get("damage") or {}
    case.eq("no release without its block, no address reuse, nothing lost or missing",
            [0, 0, 0, 0], [summ.get("unmatched_frees"), dmg.get("reused_addresses"),
                           dmg.get("lost_events"), dmg.get("missing_events")])
    churn = [s for s in doc.get("sites") or []
             if (s.get("frames") or [{}])[0].get("function") == "thread_churn"]
    case.check("every churned block recorded is released: thread_churn leaks nothing",
               churn and all(s.get("leaked_blocks") == 0 for s in churn),
               repr([(s.get("allocations"), s.get("leaked_blocks")) for s in churn]))
    return case


CASES = [
    ("live-clients", case_clients),
    ("live-mode", case_mode),
    ("live-mode-threads", case_mode_threads),
    ("live-period", case_period),
    ("live-endpoints", case_endpoints),
    ("live-errors", case_errors),
    ("live-asan", case_asan),
    ("live-children", case_children),
    ("live-bounds", case_bounds),
]
