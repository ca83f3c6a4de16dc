"""Integration cases for `memviz ui`, the web UI (docs/UI.md), driven in
Debian's headless chromium by web/test/ui_check.mjs (puppeteer-core).

  ui-views    on churn's trace: every view loads with no console error or
              failed request; the summary's numbers equal report --json's;
              the flame graph's whole equals the summary's number for each
              of the five costs, top-down and bottom-up; the searched
              function's highlighted cost equals the sum of its sites'
              from report --json; hovering a frame names it; the heap over
              time has its points and the peak. The server (the ASan
              build) answers bad queries with 400/404/405 and stops on
              SIGINT with status 0. MEMVIZ_UI_SHOTS=DIR keeps screenshots.
  ui-window   the brush on phases' heap over time (from 30% to 60% of the
              run: phase B's allocations, not A's): the summary of the
              window equals report --json --from --to's, the flame graph adds
              up to the window's peak, and clearing the window brings the
              whole run back
  ui-snapshots
              grower with a snapshot every 50 ms: the heap map's cells hold
              the snapshot's bytes, its legend is memviz retain's sites by
              their bytes, the pointer names the block; the Snapshots view's leak
              kinds, loss records, roots and sites by retained size equal
              memviz leaks --json's and retain --json's, for the snapshot at
              exit and for another one chosen; the top retained site's path
              starts at global kept; the top grower's bytes at every
              snapshot equal growth --json's
  ui-sampled  churn under --sample 4k: the summary says its numbers are
              estimates (one allocation in every 4 KiB), and they and the
              flame graphs' wholes are report --json's estimates
  ui-link     an address naming a view, a cost and a window opens on them
              (the flame graph by allocations; the window's summary, as
              report --from --to's), and the page keeps its address
  ui-marks    instrumented: the heap over time lists the report's phases and
              log lines, in order, and the snapshot at exit
  ui-diff     memviz ui BASE NEW on phases at scales 1 and 2: the Diff view's
              totals are the two reports', the functions that grew are memviz
              diff --json's (phase_b by 1 MiB), the flame graph is the new
              run's with the base's cost of each context (phase_b's frame:
              +1 MiB on hover)
  ui-html     memviz html on churn's trace: one file under 10 MB that opens
              in chromium with every request but its own refused, and shows
              what ui-views checks, the same numbers
  ui-html-budget
              memviz html --max-size 600k on branches (a call tree of 8,191
              nodes): the file stays under 600 KiB and its flame graphs,
              with fewer frames than the default file's, still add up to
              the summary's numbers
  ui-tui      memviz tui on churn's trace, driven through tmux: the view
              ends at the end of the run with the report's numbers (heap
              and blocks not freed, allocation calls, releases, the peak);
              left pauses it back in the run; page 2 has the report's
              summary and top site, page 3 the call tree (x opens the
              heaviest path; c: the next cost, the root then the leaked
              bytes), page 4 memviz leaks' reachable bytes, page 5 the
              heap map in characters, page 6 the whole run's heap and its
              peak; ? the keys;
              q quits with status 0;
              without a terminal, or on a missing trace: one line, status 1
  ui-tui-snapshots
              memviz tui on grower's snapshots: page 4 shows the one at exit,
              [ the one before, each with memviz leaks' numbers
  ui-live     memviz ui --live on memviz run --live's stepper, in chromium:
              the Live view alone; the program's heap at each step, exactly;
              pause holds the view while the program steps on, live comes
              back to it, the cursor goes back through the window; a
              snapshot through the UI (the live server's token); a POST
              without the UI's header is refused; trace queries are 404
  ui-live-children
              family under run --live: the Live view offers the parent and
              its two children; picking a child shows its own heap
  ui-concurrent
              eight clients at once on the ASan/UBSan server, with queries
              that replay and queries from the model: all 200, the same
              query the same document, the server clean
  ui-errors   a missing trace, a bad option, a bad port or host: one line
              and a non-zero status; off loopback every request needs the
              token (401 without it), which is kept in a 0600 file
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import time
import urllib.error
import urllib.request

import run_tests as rt
from cases_live import heap_at

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "web", "test", "ui_check.mjs")


def start_ui(case, memviz, trace, extra=()):
    """`memviz ui` on trace; (process, url) once it printed its address."""
    log = open(os.path.join(case.dir, "ui.out"), "wb")
    err = open(os.path.join(case.dir, "ui.err"), "wb")
    p = subprocess.Popen([memviz, "ui", "--port", "0"] + list(extra) + ([trace] if trace else []),
                         stdout=log, stderr=err)
    end = time.monotonic() + 60
    while time.monotonic() < end and p.poll() is None:
        with open(os.path.join(case.dir, "ui.out"), "rb") as f:
            text = f.read().decode(errors="replace")
        if "http://" in text:
            url = text[text.index("http://"):].split()[0]
            return p, url
        time.sleep(0.05)
    return p, None


def traced(case, env, prog, run_args=(), prog_args=(), label=None):
    """`memviz run RUN_ARGS -o CASE_DIR/PROG.mvz PROG PROG_ARGS`, checked (the
    check is "PROG traced", or label): the trace's path, or None."""
    trace = os.path.join(case.dir, prog + ".mvz")
    rc, _, err, _ = rt.run([env.memviz, "run"] + list(run_args) + ["-o", trace, env.prog(prog)] +
                           list(prog_args))
    return trace if case.check(label or "%s traced" % prog, rc == 0, rt.tail(err)) else None


def stop_ui(case, p, label):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    with open(os.path.join(case.dir, "ui.err"), "rb") as f:
        err = f.read()
    complaint = rt.sanitizer_complaint(err)
    case.check("%s: stops on SIGINT with status 0, no sanitizer complaint" % label,
               p.returncode == 0 and not complaint,
               "%s%s; stderr: %s" % (rt.rc_str(p.returncode), ", " + complaint if complaint else "",
                                     rt.tail(err)))


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def http_post_status(url):
    req = urllib.request.Request(url, data=b"", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def browser_ready(case):
    ok = case.check("chromium and web/node_modules are installed (scripts/install-deps.sh)",
                    shutil.which("chromium") and shutil.which("node") and os.path.isdir(
                        os.path.join(ROOT, "web", "node_modules", "puppeteer-core")), "")
    return ok


def run_check(case, url, func, brush=None):
    argv = ["node", CHECK, url, func]
    env = dict(os.environ, MEMVIZ_UI_BRUSH=brush) if brush else None
    shots = os.environ.get("MEMVIZ_UI_SHOTS")
    if shots:
        os.makedirs(shots, exist_ok=True)
        argv.append(shots)
    rc, out, err, _ = rt.run(argv, timeout=120, env=env)
    if not case.check("ui_check.mjs exits 0", rc == 0, "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    try:
        return json.loads(out.decode())
    except ValueError as e:
        case.check("ui_check.mjs prints JSON", False, "%s: %s" % (e, rt.tail(out)))
        return None


def check_views(case, seen, rep, func, standalone=False):
    s = rep["summary"]
    case.check("the browser ran every step", "error" not in seen, seen.get("error", ""))
    case.eq("no console errors", [], seen["console_errors"])
    case.eq("no page errors", [], seen["page_errors"])
    case.eq("no failed requests", [], seen["failed_requests"])
    shown = seen.get("summary", {})
    case.eq("the summary shows 11 numbers", 11, len(shown))
    for k, v in sorted(shown.items()):
        case.eq("summary %s equals report --json's" % k, s[k], v)
    fl = seen.get("flame", {})
    for cost, key in (("peak", "peak_bytes"), ("leaked", "leaked_bytes"),
                      ("allocations", "allocations"), ("bytes", "allocated_bytes"),
                      ("temporary", "temporary")):
        case.eq("flame graph by %s: the whole is the summary's %s" % (cost, key), s[key],
                fl.get(cost, {}).get("total"))
        case.eq("flame graph by %s: frames drawn" % cost, (2, None), fl.get(cost, {}).get("drawn"))
    case.check("flame graph draws %s" % func, fl.get("function_drawn"), "")
    case.check("hovering %s names it in the details line" % func,
               (fl.get("details") or "").startswith(func + ": "), repr(fl.get("details")))
    sites = rt.select_sites(rep, func, match="any")
    want = sum(x["at_peak_bytes"] for x in sites)
    st = fl.get("peak", {})
    case.eq("search '%s': frames highlighted" % func, (1, None), fl.get("search_matches"))
    case.eq("search '%s': the cost under them is its sites' at-peak bytes" % func, want,
            fl.get("search_value"))
    case.eq("bottom-up: the same whole", s["peak_bytes"], fl.get("bottom_up", {}).get("total"))
    case.check("bottom-up: an allocating function first",
               (fl.get("bottom_up", {}).get("first_frame") or "").split(":")[0] not in ("", "all"),
               repr(fl.get("bottom_up", {}).get("first_frame")))
    case.check("flame graph frames are pruned, not all sent", st.get("frames", 0) >= 2, repr(st))
    check_sites(case, seen.get("sites") or {}, rep)
    tl = seen.get("timeline", {})
    case.eq("heap over time: points", 800, tl.get("points"))
    case.eq("heap over time: the peak", s["peak_bytes"], tl.get("peak"))
    case.check("heap over time: drawn (canvas, legend)", tl.get("canvas") and "heap" in tl.get(
        "legend", ""), repr(tl))
    split = tl.get("split", {})
    case.eq("split by function: series drawn", (1, 10), split.get("series"))
    into = split.get("drill_into") or ""
    if not standalone:
        case.check("drill-down into function %s: its sites alone" % into,
                   into and split.get("drilled") and
                   all(n.startswith(into + " ") or n == into for n in split.get("drilled")),
                   repr(split.get("drilled")))
    case.check("split by function: %s is one of them, in the legend" % func,
               any(n.startswith(func + " [") for n in split.get("names", [])) and
               func in split.get("legend", ""), repr(split))


def check_sites(case, st, rep):
    """The Sites view against report --json --all-sites: the ranking, the
    totals, the breakdowns, and a function's inclusive and self cost."""
    s = rep["summary"]
    sites = rt.sites_of(rep)
    case.eq("sites by peak: the whole is the summary's peak", s["peak_bytes"], st.get("total"))
    ranked = sorted((x for x in sites if x["at_peak_bytes"]),
                    key=lambda x: (-x["at_peak_bytes"], x["stack_id"]))
    rows = st.get("rows") or []
    case.eq("sites by peak: the rows are report's sites in its order",
            [(x["stack_id"], x["at_peak_bytes"]) for x in ranked[:len(rows)]],
            [(r["stack"], r["cost"]) for r in rows])
    case.eq("sites: rows shown", (1, 50), len(rows))
    sz = st.get("sizes") or {}
    case.eq("sizes: the histogram counts every allocation", s["allocations"], sz.get("allocations"))
    case.eq("sizes: one bar per size class of report's", len(rep.get("sizes") or []), sz.get("buckets"))
    case.check("sizes: drawn", sz.get("canvas"), repr(sz))
    lt = st.get("lifetimes") or {}
    case.eq("lifetime by size: every block counted once", s["allocations"], lt.get("total"))
    case.eq("lifetime by size: never freed are the blocks not freed", s["leaked_blocks"],
            lt.get("never"))
    calls = {}
    for x in sites:
        for e, n in (x.get("entries") or {}).items():
            calls[e] = calls.get(e, 0) + n
    case.eq("allocator functions: report's calls per entry point", calls, st.get("allocators"))
    case.check("a click on a site shows its stack", len(st.get("stack_shown") or []) >= 2,
               repr(st.get("stack_shown")))
    fn = st.get("function") or {}
    name = fn.get("function")
    if not case.check("a click on a function shows its callers and callees", name and
                      fn.get("callers", 0) >= 1, repr(fn)):
        return
    incl = sum(x["at_peak_bytes"] for x in sites
               if any(f.get("function") == name for f in x.get("frames") or []))
    self = sum(x["at_peak_bytes"] for x in sites
               if (x.get("frames") or [{}])[0].get("function") == name)
    case.eq("function %s: inclusive peak = its sites' (each stack once)" % name, incl,
            fn.get("inclusive"))
    case.eq("function %s: self peak = the sites it allocates at" % name, self, fn.get("self"))


def tool_json(case, env, argv, what):
    rc, out, err, _ = rt.run([env.memviz] + argv, timeout=120)
    if not case.check("%s exits 0" % what, rc == 0, rt.tail(err)):
        return None
    return json.loads(out.decode())


def check_snapshot_view(case, env, trace, st, label, name=None):
    """One snapshot as the view shows it against memviz leaks --json and
    memviz retain --json (of the same snapshot)."""
    pick = ["--snapshot", name] if name else []
    lk = tool_json(case, env, ["leaks", "--json"] + pick + [trace], "%s: leaks --json" % label)
    rt_ = tool_json(case, env, ["retain", "--json"] + pick + [trace], "%s: retain --json" % label)
    if not lk or not rt_:
        return
    kinds = {k: {"bytes": v["bytes"], "blocks": v["blocks"]} for k, v in lk["leaks"].items()
             if k in ("definite", "indirect", "possible", "reachable")}
    case.eq("%s: leak kinds equal memviz leaks'" % label, kinds, st.get("kinds"))
    lost = sorted((r["kind"], r["frames"][0]["function"], r["bytes"]) for r in lk["records"]
                  if r["kind"] != "reachable")
    shown = sorted(tuple(r) for r in st.get("records") or [] if r[0] != "reachable")
    case.eq("%s: loss records (kind, site, bytes) equal memviz leaks'" % label, lost[:20], shown)
    roots = sorted(((r["retained_bytes"], r["kind"], r["name"]) for r in rt_["roots"]
                    if r["retained_bytes"]), key=lambda r: -r[0])
    got = [(r[2], r[0], r[1]) for r in st.get("roots") or []]
    case.eq("%s: roots: as many as memviz retain's (20 at most)" % label, min(20, len(roots)),
            len(got))
    case.eq("%s: roots by retained size equal memviz retain's" % label,
            [r[0] for r in roots[:len(got)]], [r[0] for r in got])
    case.check("%s: the root retaining most is memviz retain's" % label,
               not got or got[0] in [r for r in roots if r[0] == got[0][0]], repr(got[:1]))
    want_sites = sorted((x["retained_bytes"] for x in rt_["sites"]), reverse=True)
    case.eq("%s: sites by retained size equal memviz retain's" % label,
            want_sites[:len(st.get("sites") or [])], [x[1] for x in st.get("sites") or []])


def check_heapmap(case, env, trace, hm, url):
    """The heap map of the snapshot at exit: every block painted in cells
    that hold the snapshot's bytes, the legend's sites are memviz retain's
    by their own bytes, the block under the first cell is a real one."""
    rt_ = tool_json(case, env, ["retain", "--json", trace], "retain --json")
    st, body = http_status(url + "api/heapmap?cells=64")
    doc = json.loads(body.decode()) if st == 200 else {}
    if rt_ and doc:
        cells = doc["cells"]
        used = sum(f * doc["cell_bytes"] // 100 for f in doc["fill"])
        total = sum(x["shallow_bytes"] for x in rt_["sites"])
        case.check("heap map: the cells hold the snapshot's bytes (to a cell's rounding each)",
                   total <= used <= total + cells * doc["cell_bytes"] // 100 + cells,
                   "%d in cells, %d in blocks" % (used, total))
        case.eq("heap map: about 64 cells asked, that many made (regions round up)", (64, 64 + 64),
                cells)
    want = sorted((x["shallow_bytes"] for x in (rt_ or {}).get("sites", [])), reverse=True)
    legend = hm.get("legend") or []
    case.eq("heap map: the legend's sites by bytes are memviz retain's", want[:len(legend)],
            [b for _, b in legend])
    case.check("heap map: drawn, cells painted", hm.get("painted", 0) >= 1, repr(hm.get("status")))
    hov = hm.get("hover") or ["", 0]
    case.check("heap map: the pointer on a painted cell names a block, its age and its stack",
               hov[1] > 0 and " old (allocated at " in hov[0] and "allocated at must" in hov[0],
               repr(hov))
    if doc:
        ages = []
        for cell in (0, doc["cells"] // 2, doc["cells"] - 1):
            st, body = http_status(url + "api/heapmap/block?cells=64&cell=%d" % cell)
            b = json.loads(body.decode()) if st == 200 else {}
            if "addr" in b:
                ages.append((b.get("born_ns", -1), b.get("age_ns", -1)))
        case.check("heap map: a block's age is the snapshot's time less its allocation's",
                   ages and all(0 < born and born + age == doc["time_ns"] for born, age in ages),
                   "%r, snapshot at %d" % (ages, doc["time_ns"]))


def check_window(case, env, trace, seen, rep):
    """The brush: the window's summary is report --json --from --to's; the
    flame graph adds up to the window's peak; clearing it shows the run."""
    w = seen.get("window") or {}
    if not case.check("brush: a window chosen and shown", w.get("from_ns") and w.get("to_ns") and
                      w.get("shown"), repr(w)):
        return
    a, b = int(w["from_ns"]), int(w["to_ns"])
    case.check("brush: the window is inside the run", 0 <= a < b <= rep["summary"]["duration_ns"],
               "%d..%d" % (a, b))
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--from", "%d.%09d" % divmod(a, 10**9),
                              "--to", "%d.%09d" % divmod(b, 10**9), trace])
    if not case.check("report --json --from --to exits 0", rc == 0, rt.tail(err)):
        return
    want = json.loads(out.decode())["summary"]
    case.eq("brush: the window holds allocations", (1, None),
            (w.get("summary") or {}).get("allocations"))
    for k, v in sorted((w.get("summary") or {}).items()):
        case.eq("brush: summary %s equals report --from --to's" % k, want[k], v)
    case.eq("brush: the flame graph by peak adds up to the window's peak", want["peak_bytes"],
            (w.get("flame_peak") or {}).get("total"))
    case.eq("brush cleared: the flame graph is the whole run's again", rep["summary"]["peak_bytes"],
            (w.get("cleared") or {}).get("total"))


def check_queries(case, url):
    for q, code in (("api/sites?top=0", 400), ("api/sites?cost=x", 400), ("api/function", 400),
                    ("api/function?name=main&cost=nope", 400), ("api/breakdown", 200),
                    ("api/function?name=no_such_function", 200),
                    ("api/summary?from_ns=5&to_ns=4", 400), ("api/flame?to_ns=x", 400),
                    ("api/summary?from_ns=-1", 400), ("api/flame?from_ns=1000&to_ns=2000", 200),
                    ("api/flame?cost=bogus", 400), ("api/flame?direction=sideways", 400),
                    ("api/flame?min=2", 400), ("api/nothing", 404), ("app.js", 200),
                    ("api/flame?cost=leaked&direction=bottom-up&min=0", 200)):
        st, body = http_status(url + q)
        case.eq("GET /%s: status" % q, code, st)
        if code != 200:
            lines = body.decode(errors="replace").strip().splitlines()
            case.check("GET /%s: one line saying why" % q,
                       len(lines) == 1 and lines[0].startswith("memviz: "), repr(body))
    case.eq("POST: 405", 405, http_post_status(url + "api/summary"))
    check_flame_doc(case, url)
    check_series_doc(case, url)


def flame_doc(url, query):
    st, body = http_status(url + "api/flame?" + query)
    return json.loads(body.decode()) if st == 200 else None


def check_flame_doc(case, url):
    """The document's invariants: unpruned, each node's inclusive cost is
    its self cost plus its children's; pruned, every node kept is at or
    above the threshold and still carries its whole inclusive cost."""
    for direction in ("top-down", "bottom-up"):
        d = flame_doc(url, "cost=allocations&min=0&direction=" + direction)
        if not case.check("%s, min=0: a document" % direction, d, ""):
            continue
        nodes = d["nodes"]
        kids = [0] * len(nodes)
        for n in nodes[1:]:
            kids[n[0]] += n[4]
        bad = [i for i, n in enumerate(nodes) if n[5] + kids[i] != n[4]]
        case.eq("%s, min=0: inclusive = self + children's, at every node" % direction, [], bad)
        case.eq("%s, min=0: the root is the whole" % direction, d["total"], nodes[0][4])
        case.check("%s: names index strings" % direction, all(
            -1 <= x < len(d["strings"]) for n in nodes for x in n[1:4]), "")
        p = flame_doc(url, "cost=allocations&min=0.25&direction=" + direction)
        small = [n for n in p["nodes"][1:] if n[4] < p["total"] * 0.25]
        case.eq("%s, min=0.25: no node under a quarter" % direction, [], small)
        case.check("%s, min=0.25: fewer nodes than unpruned" % direction,
                   len(p["nodes"]) < len(nodes), "%d vs %d" % (len(p["nodes"]), len(nodes)))


def check_series_doc(case, url):
    """Each split of the heap adds up to the heap at every point; the groups
    come most at the peak first; bad splits are refused."""
    st, body = http_status(url + "api/timeline")
    heap = json.loads(body.decode())["heap"] if st == 200 else []
    for by in ("site", "function", "module"):
        st, body = http_status(url + "api/series?top=3&by=" + by)
        if not case.eq("series by %s: status" % by, 200, st):
            continue
        d = json.loads(body.decode())
        sums = [sum(v[i] for v in d["series"]) + d["other"][i] for i in range(len(d["other"]))]
        case.check("series by %s: the groups and the rest add up to the heap at every point" % by,
                   sums == heap, "first differing point: %r" % next(
                       ((i, a, b) for i, (a, b) in enumerate(zip(sums, heap)) if a != b), None))
        case.eq("series by %s: at most 3 groups" % by, (1, 3), len(d["names"]))
        case.check("series by %s: most at the peak first" % by,
                   d["ranked_by"] == sorted(d["ranked_by"], reverse=True), repr(d["ranked_by"]))
        st, body = http_status(url + "api/series?top=3&rank=average&by=" + by)
        avg = json.loads(body.decode()) if st == 200 else {}
        case.check("series by %s, ranked by average: largest first, adding up" % by,
                   avg.get("rank") == "average" and avg["ranked_by"] == sorted(
                       avg["ranked_by"], reverse=True) and
                   [sum(v[i] for v in avg["series"]) + avg["other"][i]
                    for i in range(len(avg["other"]))] == heap, repr(avg.get("ranked_by")))
    st, body = http_status(url + "api/series?by=function&top=2&add=LEAK_")
    added = json.loads(body.decode()) if st == 200 else {}
    case.eq("series &add=LEAK_: the function named so first (any case)", "leak_some",
            ((added.get("names") or [""])[0]).split(" ")[0])
    for q in ("api/series?by=thread", "api/series?top=0", "api/series?top=51",
              "api/series?rank=at", "api/series?rank=median"):
        case.eq("GET /%s: 400" % q, 400, http_status(url + q)[0])


def case_window(env, workroot):
    case = rt.Case("ui-window", workroot)
    if not browser_ready(case):
        return case
    trace = traced(case, env, "phases")
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "phases")
    if not rep:
        return case
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        seen = run_check(case, url, "phase_b", brush="0.3,0.6")
        if seen:
            case.check("the browser ran every step", "error" not in seen, seen.get("error", ""))
            case.eq("no console errors", [], seen["console_errors"] + seen["page_errors"])
            check_window(case, env, trace, seen, rep)
            case.eq("the window has fewer allocations than the run",
                    (1, rep["summary"]["allocations"] - 1),
                    ((seen.get("window") or {}).get("summary") or {}).get("allocations"))
    finally:
        stop_ui(case, p, "server")
    return case


def case_snapshots(env, workroot):
    case = rt.Case("ui-snapshots", workroot)
    if not browser_ready(case):
        return case
    trace = traced(case, env, "grower", run_args=["--snapshot-every", "50ms"], prog_args=["10"],
                   label="grower traced with snapshots")
    if not trace:
        return case
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        seen = run_check(case, url, "must")
        if not seen:
            return case
        case.check("the browser ran every step", "error" not in seen, seen.get("error", ""))
        case.eq("no console errors", [], seen["console_errors"] + seen["page_errors"])
        snaps = seen.get("snapshots") or {}
        first = snaps.get("first") or {}
        case.eq("the snapshots listed", (3, None), len(first.get("options") or []))
        check_snapshot_view(case, env, trace, first, "snapshot at exit")
        case.check("a click on the top retained site shows its path from global kept",
                   (snaps.get("path") or [""])[0].startswith("global kept"), repr(snaps.get("path")))
        other = snaps.get("other") or {}
        name = (other.get("status") or "").split(":")[0]
        if case.check("another snapshot chosen", name and other.get("chosen") != first.get("chosen"),
                      repr(other)):
            check_snapshot_view(case, env, trace, other, "snapshot " + name, name)
        gr = tool_json(case, env, ["growth", "--json", trace], "growth --json")
        st, body = http_status(url + "api/growth")
        doc = json.loads(body.decode()) if st == 200 else {}
        if gr and doc.get("sites"):
            top = doc["sites"][0]
            same = [x for x in gr["sites"] if x["frames"][0]["function"] == top["frames"][0][0]
                    and x["live_bytes"] == top["live_bytes"]]
            case.check("growth: the top grower's live bytes at every snapshot are growth --json's",
                       same, "%r vs %r" % (top["live_bytes"], [x["live_bytes"] for x in gr["sites"]]))
        case.check("growth: drawn", first.get("growth_canvas") and int(first.get("growth") or 0) >= 1,
                   repr(first.get("growth")))
        check_heapmap(case, env, trace, seen.get("heapmap") or {}, url)
        case.eq("GET /api/snapshot?id=x: 400", 400, http_status(url + "api/snapshot?id=x")[0])
        case.eq("GET /api/snapshot?id=999: 404", 404, http_status(url + "api/snapshot?id=999")[0])
    finally:
        stop_ui(case, p, "server")
    return case


class LiveCheck:
    """web/test/live_check.mjs: the Live view, a command at a time."""

    def __init__(self, url):
        self.p = subprocess.Popen(["node", os.path.join(ROOT, "web", "test", "live_check.mjs"), url],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)

    def do(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        try:
            return json.loads(out.decode())
        except ValueError:
            return {"error": "no answer: %r %r" % (out, self.p.stderr.read(2000) if out == b"" else "")}

    def close(self):
        try:
            self.p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()


def case_live(env, workroot):
    import cases_live as cl
    case = rt.Case("ui-live", workroot)
    if not browser_ready(case):
        return case
    live = cl.Live(case, env)
    if not case.check("memviz run --live serves stepper", live.port and live.next_step(),
                      live.err.decode(errors="replace")):
        live.finish()
        return case
    p, url = start_ui(case, env.asan or env.memviz, None,
                      ["--live", "127.0.0.1:%d" % live.port, "--live-token", live.trace + ".token"])
    p_url_ok = case.check("memviz ui --live prints its address", url, "")
    b = LiveCheck(url) if p_url_ok else None
    try:
        if not b:
            return case
        st = b.do("open")
        case.eq("only the Live view is offered", ["live"], st.get("tabs"))
        st = b.do("wait-blocks 10")
        case.eq("step 1: the view shows the program's heap, 10 blocks", [10, heap_at(1)],
                [st.get("heap_blocks"), st.get("heap_bytes")])
        case.eq("step 1: live", "live", st.get("mode"))
        case.check("the top site is step_alloc", (st.get("sites") or [""])[0] == "step_alloc",
                   repr(st.get("sites")))
        paused = b.do("pause")
        case.eq("pause: paused", "paused", paused.get("mode"))
        case.check("step 2 taken by the program", live.next_step(), "")
        time.sleep(0.6)
        st = b.do("state")
        case.eq("paused: the view stays at step 1 while the program goes on", [10, paused.get("seq")],
                [st.get("heap_blocks"), st.get("seq")])
        st = b.do("now")
        st = b.do("wait-blocks 20")
        case.eq("live again: step 2's heap", [20, heap_at(2)], [st.get("heap_blocks"), st.get("heap_bytes")])
        st = b.do("first")
        case.check("the cursor back at the window's start: an earlier heap",
                   st.get("mode") == "paused" and st.get("heap_blocks", 99) < 20, repr(st))
        msg = b.do("snapshot").get("message", "")
        case.check("a snapshot taken through memviz ui (the live server's token)",
                   msg.startswith("snapshot ") and " taken " in msg, repr(msg))
        shots = os.environ.get("MEMVIZ_UI_SHOTS")
        if shots:
            b.do("now")
            b.do("shot %s" % os.path.join(shots, "ui-live.png"))
        st, body = http_status(url + "api/summary")
        case.eq("--live: the trace queries are not there (404)", 404, st)
        req = urllib.request.Request(url + "api/v1/snapshot", data=b"", method="POST")
        try:
            code = urllib.request.urlopen(req, timeout=20).status
        except urllib.error.HTTPError as e:
            code = e.code
        case.eq("a POST without X-Memviz is refused (403)", 403, code)
        case.eq("the live server's state passes through", 200, http_status(url + "api/v1/state")[0])
        errs = b.do("quit").get("errors")
        case.eq("no console errors", [], errs)
    finally:
        if b:
            b.close()
        live.finish()
        stop_ui(case, p, "memviz ui --live")
    return case


def case_diff(env, workroot):
    case = rt.Case("ui-diff", workroot)
    if not browser_ready(case):
        return case
    traces = []
    for scale in ("1", "2"):
        t = os.path.join(case.dir, "phases%s.mvz" % scale)
        rc, _, err, _ = rt.run([env.memviz, "run", "-o", t, env.prog("phases"), scale])
        if not case.check("phases %s traced" % scale, rc == 0, rt.tail(err)):
            return case
        traces.append(t)
    want = tool_json(case, env, ["diff", "--json"] + traces, "diff --json")
    reps = [rt.report_json(case, env, t, "phases") for t in traces]
    if not want or not all(reps):
        return case
    p, url = start_ui(case, env.asan or env.memviz, None, traces)
    if not case.check("memviz ui BASE NEW prints its address", url, ""):
        p.kill()
        return case
    try:
        seen = run_check(case, url, "phase_b")
        if not seen:
            return case
        case.eq("no console errors", [], seen["console_errors"] + seen["page_errors"])
        d = seen.get("diff") or {}
        for k in ("peak_bytes", "leaked_bytes", "allocations", "allocated_bytes", "temporary"):
            case.eq("totals: %s, base and new, are the two reports'" % k,
                    [reps[0]["summary"][k], reps[1]["summary"][k]], (d.get("totals") or {}).get(k))
        case.eq("the flame graph is the new run's, by peak", reps[1]["summary"]["peak_bytes"],
                d.get("flame_total"))
        case.eq("... beside the base run's", reps[0]["summary"]["peak_bytes"], d.get("flame_base_total"))
        grew = [(f["function"], f["peak"]["delta"]) for f in want["functions"] if f["peak"]["delta"] > 0]
        grew.sort(key=lambda x: (-x[1], x[0]))
        case.eq("functions that grew: memviz diff --json's", grew[:20], [tuple(x) for x in d.get("grew") or []])
        case.eq("phase_b grew by 1 MiB (scale 2 against 1)", [["phase_b  [phases]", 1048576]],
                [x for x in d.get("grew") or [] if x[0].startswith("phase_b")])
        hov = d.get("hovered") or ["", 0]
        case.check("hovering phase_b's frame: +1 MiB against the base", hov[1] == 1048576 and
                   "base 1.00 MiB" in hov[0], repr(hov))
    finally:
        stop_ui(case, p, "server")
    return case


def case_marks(env, workroot):
    case = rt.Case("ui-marks", workroot)
    if not browser_ready(case):
        return case
    trace = traced(case, env, "instrumented")
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "instrumented")
    if not rep:
        return case
    p, url = start_ui(case, env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        seen = run_check(case, url, "main")
        if not seen:
            return case
        case.eq("no console errors", [], seen["console_errors"] + seen["page_errors"])
        marks = seen.get("timeline_marks") or []
        phases = [m[1] for m in marks if m[0] == "P"]
        logs = [m[1] for m in marks if m[0] == "L"]
        case.eq("heap over time marks the report's phases, in order",
                [ph["name"] for ph in rep.get("phases") or []], [t.split(" ", 3)[-1] for t in phases])
        case.eq("... and its log lines", [lg["text"] for lg in rep.get("log") or []],
                [t.split(" ", 3)[-1] for t in logs])
        case.check("... and the snapshot at exit", any(m[0] == "S" and m[1].endswith(" exit")
                                                       for m in marks), repr(marks))
    finally:
        stop_ui(case, p, "server")
    return case


def case_sampled(env, workroot):
    case = rt.Case("ui-sampled", workroot)
    if not browser_ready(case):
        return case
    trace = traced(case, env, "churn", run_args=["--sample", "4k"],
                   label="churn traced with --sample 4k")
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "churn sampled")
    if not rep:
        return case
    p, url = start_ui(case, env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        seen = run_check(case, url, "main")
        if not seen:
            return case
        case.eq("no console errors", [], seen["console_errors"] + seen["page_errors"])
        case.check("the summary says the numbers are estimates, one allocation in 4 KiB",
                   "estimates" in seen.get("sampled", "") and "4.00 KiB" in seen.get("sampled", ""),
                   repr(seen.get("sampled")))
        for k, v in sorted((seen.get("summary") or {}).items()):
            case.eq("summary %s: report --json's estimate" % k, rep["summary"][k], v)
        fl = seen.get("flame") or {}
        for cost, key in (("peak", "peak_bytes"), ("allocations", "allocations"),
                          ("bytes", "allocated_bytes")):
            case.eq("flame graph by %s adds up to the estimate" % cost, rep["summary"][key],
                    (fl.get(cost) or {}).get("total"))
    finally:
        stop_ui(case, p, "server")
    return case


def case_live_children(env, workroot):
    """family under memviz run --live: the Live view offers the parent and
    its two children, and shows a child's own heap when picked."""
    import re
    case = rt.Case("ui-live-children", workroot)
    if not browser_ready(case):
        return case
    trace = os.path.join(case.dir, "family.mvz")
    run = subprocess.Popen([env.memviz, "run", "--live", "127.0.0.1:0", "-o", trace, "--",
                            env.prog("family")], cwd=case.dir, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    m = re.search(rb"live at http://[0-9.]+:(\d+)/", run.stderr.readline())
    ready = run.stdout.readline() == b"ready\n"
    p, url, b = None, None, None
    try:
        if not case.check("family runs, held, under memviz run --live", m and ready, ""):
            return case
        p, url = start_ui(case, env.memviz, None, ["--live", "127.0.0.1:%s" % m.group(1).decode()])
        if not case.check("memviz ui --live prints its address", url, ""):
            return case
        b = LiveCheck(url)
        b.do("open")
        got = b.do("procs")
        procs = got.get("procs") or []
        case.check("the view offers the three processes", got.get("shown") and len(procs) == 3,
                   repr(got))
        forks = [x.split()[0] for x in procs if " fork " in x]
        seen = []
        for pid in forks:
            st = b.do("pick %s" % pid)
            seen.append((st.get("heap_blocks"), st.get("heap_bytes")))
        case.eq("each child picked: its own heap (10 and 20 blocks of 1,000 bytes)",
                [(10, 10000), (20, 20000)], sorted(seen))
        case.eq("no console errors", [], b.do("quit").get("errors"))
    finally:
        if b:
            b.close()
        try:
            run.communicate(input=b"\n", timeout=30)
        except subprocess.TimeoutExpired:
            run.kill()
        if p:
            stop_ui(case, p, "memviz ui --live")
    return case


def case_concurrent(env, workroot):
    """Eight clients at once on the ASan/UBSan server, asking queries that
    replay (windows, splits, lifetimes) and queries from the model, some
    the same: every answer 200, the same query the same document, and the
    server clean."""
    import threading
    case = rt.Case("ui-concurrent", workroot)
    trace = traced(case, env, "phases")
    if not trace:
        return case
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    queries = ["api/summary?from_ns=%d&to_ns=%d" % (k * 100000000, (k + 3) * 100000000)
               for k in range(6)]
    queries += ["api/flame?cost=bytes&from_ns=200000000&to_ns=900000000",
                "api/series?by=function&top=3&rank=average", "api/series?by=site&top=2",
                "api/lifetimes", "api/sites?cost=peak", "api/heapmap?cells=128",
                "api/snapshot", "api/growth", "api/breakdown"]
    answers, lock = {}, threading.Lock()

    def client(k):
        for i in range(len(queries)):
            q = queries[(i + k) % len(queries)]
            st, body = http_status(url + q)
            with lock:
                answers.setdefault(q, []).append((st, body))

    try:
        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        bad = sorted(q for q, a in answers.items() if any(st != 200 for st, _ in a))
        case.eq("every answer 200", [], bad)
        differ = sorted(q for q, a in answers.items() if len(set(b for _, b in a)) != 1)
        case.eq("the same query, the same document from every client", [], differ)
        case.eq("every query answered eight times", [8] * len(queries),
                [len(answers.get(q, [])) for q in queries])
    finally:
        stop_ui(case, p, "server")
    return case


def case_link(env, workroot):
    """An address that names a view, a cost and a window opens on them."""
    case = rt.Case("ui-link", workroot)
    if not browser_ready(case):
        return case
    trace = traced(case, env, "phases")
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "phases")
    p, url = start_ui(case, env.memviz, trace)
    if not rep or not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        check = os.path.join(ROOT, "web", "test", "link_check.mjs")
        rc, out, err, _ = rt.run(["node", check, url + "#view=flame&flame-cost=allocations", "flame"],
                                 timeout=120)
        got = json.loads(out.decode()) if rc == 0 else {}
        st = got.get("state") or {}
        case.eq("#view=flame&flame-cost=allocations: the flame graph by allocations",
                ["flame", "allocations", rep["summary"]["allocations"]],
                [st.get("view"), st.get("flame_cost"), st.get("flame_total")])
        case.check("the page keeps the address of what it shows",
                   "view=flame" in st.get("hash", "") and "flame-cost=allocations" in st.get("hash", ""),
                   repr(st.get("hash")))
        a, b = 300000000, 700000000
        rc, out, err, _ = rt.run(["node", check, url + "#view=summary&from_ns=%d&to_ns=%d" % (a, b),
                                  "summary"], timeout=120)
        got = json.loads(out.decode()) if rc == 0 else {}
        st = got.get("state") or {}
        want = tool_json(case, env, ["report", "--json", "--from", "0.3", "--to", "0.7", trace],
                         "report --from 0.3 --to 0.7")
        case.eq("a window in the address: the summary of that window",
                [str(a), str(b), (want or {}).get("summary", {}).get("allocations")],
                [st.get("from_ns"), st.get("to_ns"), (st.get("summary") or {}).get("allocations")])
        case.eq("no console errors", [], got.get("errors"))
    finally:
        stop_ui(case, p, "server")
    return case


def case_views(env, workroot):
    case = rt.Case("ui-views", workroot)
    if not browser_ready(case):
        return case
    trace = os.path.join(case.dir, "churn.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace, env.prog("churn")])
    if not case.check("churn traced", rc == 0, rt.tail(err)):
        return case
    rep = rt.report_json(case, env, trace, "churn")
    if not rep:
        return case
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        seen = run_check(case, url, "calloc_blocks")
        if seen:
            check_views(case, seen, rep, "calloc_blocks")
            check_window(case, env, trace, seen, rep)
            snaps = seen.get("snapshots") or {}
            check_snapshot_view(case, env, trace, snaps.get("first") or {}, "snapshot at exit")
            case.check("one snapshot: growth says it needs two", snaps.get("first", {}).get(
                "growth") == "0", repr(snaps.get("first", {}).get("growth")))
        check_queries(case, url)
    finally:
        stop_ui(case, p, "server")
    return case


def write_html(case, env, trace, out, extra=()):
    rc, _, err, _ = rt.run([env.memviz, "html", "-o", out] + list(extra) + [trace], timeout=120)
    return case.check("memviz html %s exits 0" % " ".join(extra), rc == 0 and os.path.isfile(out),
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err)))


def case_html(env, workroot):
    case = rt.Case("ui-html", workroot)
    if not browser_ready(case):
        return case
    trace = traced(case, env, "churn")
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "churn")
    page = os.path.join(case.dir, "churn.html")
    if not rep or not write_html(case, env, trace, page):
        return case
    case.eq("the file's size", (1, 10 << 20), os.path.getsize(page))
    seen = run_check(case, "file://" + page, "calloc_blocks")
    if seen:
        case.eq("no request left the file", [], seen["network_requests"])
        check_views(case, seen, rep, "calloc_blocks", standalone=True)
        case.check("the brush says a window needs memviz ui", "memviz ui" in (
            seen.get("window") or {}).get("standalone", ""), repr(seen.get("window")))
    return case


def case_html_budget(env, workroot):
    case = rt.Case("ui-html-budget", workroot)
    if not browser_ready(case):
        return case
    trace = traced(case, env, "branches")
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "branches")
    full, small = os.path.join(case.dir, "full.html"), os.path.join(case.dir, "small.html")
    if not rep or not write_html(case, env, trace, full) or not write_html(
            case, env, trace, small, ["--max-size", "600k"]):
        return case
    case.eq("--max-size 600k: the file's size", (1, 600 << 10), os.path.getsize(small))
    views = {}
    for name, page in (("default", full), ("600k", small)):
        seen = run_check(case, "file://" + page, "branch")
        if not seen:
            return case
        views[name] = seen
        s = rep["summary"]
        case.eq("%s: no console errors" % name, [], seen["console_errors"] + seen["page_errors"])
        for cost, key in (("peak", "peak_bytes"), ("allocations", "allocations"),
                          ("leaked", "leaked_bytes")):
            case.eq("%s: flame graph by %s adds up to %s" % (name, cost, key), s[key],
                    seen["flame"].get(cost, {}).get("total"))
    case.check("600k: fewer frames than the default file", views["600k"]["flame"]["peak"]["frames"]
               < views["default"]["flame"]["peak"]["frames"], "%d vs %d" % (
                   views["600k"]["flame"]["peak"]["frames"], views["default"]["flame"]["peak"]["frames"]))
    return case


def case_tui(env, workroot):
    import cases_live_tui as clt
    case = rt.Case("ui-tui", workroot)
    if not case.check("tmux is installed (scripts/install-deps.sh)", shutil.which("tmux"), ""):
        return case
    trace = traced(case, env, "churn")
    if not trace:
        return case
    rep = rt.report_json(case, env, trace, "churn")
    if not rep:
        return case
    s = rep["summary"]
    status = os.path.join(case.dir, "tui.status")
    t = clt.Tmux(case, "tui")
    try:
        if not case.check("tmux starts the view", t.start("%s tui %s" % (env.memviz, trace), status)):
            return case
        want = "heap %s in %d blocks" % (rt.fmt_bytes(s["leaked_bytes"]), s["leaked_blocks"])
        screen = t.wait_for(want, timeout=30)
        case.check("the view ends at the run's end: %s" % want, want in screen and "[ENDED]" in screen,
                   screen)
        for what, text in (("allocation calls", "allocations %s" % format(s["allocations"], ",")),
                           ("releases", "frees %s" % format(s["frees"], ",")),
                           ("the peak", "peak so far %s" % rt.fmt_bytes(s["peak_bytes"])),
                           ("the top site", "calloc_blocks")):
            screen = t.wait_for(text, timeout=10)
            case.check("the view shows %s: %s" % (what, text), text in screen, screen)
        t.keys("Left")
        screen = t.wait_for("[PAUSED]", timeout=10)
        case.check("left: paused back in the run", "[PAUSED]" in screen, screen)
        check_tui_pages(case, env, t, trace, rep)
        t.keys("q")
        end = time.monotonic() + 15
        while time.monotonic() < end and not os.path.exists(status):
            time.sleep(0.1)
        got = open(status).read().strip() if os.path.exists(status) else "none"
        case.eq("q quits with status 0", "0", got)
    finally:
        t.kill()
    rc, _, err, _ = rt.run([env.memviz, "tui", trace], stdin_data=b"")
    lines = err.decode(errors="replace").strip().splitlines()
    case.check("without a terminal: one line, status 1", rc == 1 and len(lines) == 1,
               "%s; %r" % (rt.rc_str(rc), lines))
    return case


def check_tui_pages(case, env, t, trace, rep):
    """memviz tui's pages 2-4 and its help, against the report and leaks."""
    s = rep["summary"]
    t.keys("2")
    screen = t.wait_for("Top sites by peak", timeout=10)
    top = max(rt.sites_of(rep), key=lambda x: (x["at_peak_bytes"], -x["stack_id"]))
    for what, text in (("the peak", "peak heap %s" % rt.fmt_bytes(s["peak_bytes"])),
                       ("allocation calls", "allocation calls %s" % format(s["allocations"], ",")),
                       ("not freed", "not freed %s in %d blocks" % (rt.fmt_bytes(s["leaked_bytes"]),
                                                                   s["leaked_blocks"])),
                       ("the top site by peak", "%s         %d calls  %s" % (
                           rt.fmt_bytes(top["at_peak_bytes"]), top["allocations"],
                           top["frames"][0]["function"]))):
        case.check("page 2 (summary) shows %s: %s" % (what, text), text in screen, screen)
    t.keys("3")
    t.keys("x")
    screen = t.wait_for("calloc_blocks", timeout=10)
    case.check("page 3 (tree): the root holds the peak, x opens down to the sites",
               ("%s 100.0%%  - all" % rt.fmt_bytes(s["peak_bytes"])) in screen and
               "- main" in screen and "build_array" in screen, screen)
    t.keys("c")
    screen = t.wait_for("Call tree by leaked", timeout=10)
    case.check("c: the tree by the next cost (leaked), the root the leaked bytes",
               ("%s 100.0%%  - all" % rt.fmt_bytes(s["leaked_bytes"])) in screen, screen)
    lk = tool_json(case, env, ["leaks", "--json", trace], "leaks --json")
    t.keys("4")
    screen = t.wait_for("Leak kinds", timeout=10)
    if lk:
        r = lk["leaks"]["reachable"]
        want = "%-10s %12s in %d blocks" % ("reachable", rt.fmt_bytes(r["bytes"]), r["blocks"])
        case.check("page 4 (snapshot): the reachable bytes and blocks of memviz leaks",
                   want in screen, "%r in %s" % (want, screen))
    t.keys("5")
    # the map is made on the page's first draw (a replay to the snapshot):
    # on a loaded machine that takes seconds
    screen = t.wait_for("Heap map of", timeout=40)
    want = '"exit": %d blocks in address order' % s["leaked_blocks"]
    case.check("page 5 (heap map): the snapshot at exit's blocks, the top site's letter",
               want in screen and "A " in screen and "AAA" in screen, screen)
    t.keys("6")
    screen = t.wait_for("Heap over the whole run", timeout=10)
    want = "the peak, %s at %s" % (rt.fmt_bytes(s["peak_bytes"]), rt.fmt_duration(s["peak_time_ns"]))
    case.check("page 6 (timeline): the whole run's heap and its peak: %s" % want,
               want in screen and "^" in screen and "#" in screen, screen)
    t.keys("?")
    screen = t.wait_for("this help", timeout=10)
    case.check("?: the keys", "this help" in screen and "1-6" in screen, screen)
    t.keys("a")
    screen = t.wait_for("Heap over the whole run", timeout=10)
    case.check("any key: back from the help", "Heap over the whole run" in screen, screen)


def case_tui_snapshots(env, workroot):
    """memviz tui on grower with a snapshot every 50 ms: page 4 shows the
    snapshot at exit first, and [ the one before, with memviz leaks' numbers
    for each."""
    import cases_live_tui as clt
    case = rt.Case("ui-tui-snapshots", workroot)
    if not case.check("tmux is installed (scripts/install-deps.sh)", shutil.which("tmux"), ""):
        return case
    trace = traced(case, env, "grower", run_args=["--snapshot-every", "50ms"], prog_args=["10"],
                   label="grower traced with snapshots")
    if not trace:
        return case
    snaps = [x for x in (tool_json(case, env, ["growth", "--json", trace], "growth --json") or {}
                         ).get("snapshots", [])]
    status = os.path.join(case.dir, "tui.status")
    t = clt.Tmux(case, "tuisnap")
    try:
        if not case.check("tmux starts memviz tui", t.start("%s tui %s" % (env.memviz, trace), status)):
            return case
        t.keys("4")
        for name in ("exit", snaps[-2]["name"] if len(snaps) > 1 else "?"):
            lk = tool_json(case, env, ["leaks", "--json", "--snapshot", name, trace],
                           "leaks --json --snapshot " + name)
            screen = t.wait_for('Snapshot "%s"' % name, timeout=15)
            d = (lk or {}).get("leaks", {}).get("definite", {})
            want = "%-10s %12s in %d blocks" % ("definite", rt.fmt_bytes(d.get("bytes", -1)),
                                                 d.get("blocks", -1))
            case.check("page 4, snapshot %s: memviz leaks' definite bytes and blocks" % name,
                       ('Snapshot "%s"' % name) in screen and want in screen, screen)
            t.keys("[")
        t.keys("q")
    finally:
        t.kill()
    return case


def expect_error(case, what, argv, code):
    rc, out, err, _ = rt.run(argv, timeout=60)
    lines = err.decode(errors="replace").strip().splitlines()
    case.check("%s: status %d, one line" % (what, code), rc == code and len(lines) >= 1 and
               lines[0].startswith("memviz"), "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err)))


def case_errors(env, workroot):
    case = rt.Case("ui-errors", workroot)
    m = env.memviz
    expect_error(case, "missing trace", [m, "ui", os.path.join(case.dir, "none.mvz")], 1)
    expect_error(case, "bad option", [m, "ui", "--frobnicate", "x.mvz"], 2)
    expect_error(case, "bad port", [m, "ui", "--port", "70000", "x.mvz"], 2)
    expect_error(case, "bad host", [m, "ui", "--host", "nowhere", "x.mvz"], 2)
    expect_error(case, "no trace", [m, "ui"], 2)
    bad = os.path.join(case.dir, "bad.mvz")
    with open(bad, "wb") as f:
        f.write(b"not a trace at all")
    expect_error(case, "not a trace", [m, "ui", bad], 1)
    expect_error(case, "html: missing trace", [m, "html", os.path.join(case.dir, "none.mvz")], 1)
    expect_error(case, "html: not a trace", [m, "html", "-o", bad + ".html", bad], 1)
    expect_error(case, "html: --max-size too small", [m, "html", "--max-size", "100k", bad], 2)
    expect_error(case, "html: no trace", [m, "html"], 2)
    expect_error(case, "tui: no trace", [m, "tui"], 2)
    trace = os.path.join(case.dir, "churn.mvz")
    rc, _, err, _ = rt.run([m, "run", "-o", trace, env.prog("churn")])
    if not case.check("churn traced", rc == 0, rt.tail(err)):
        return case
    token_file = os.path.join(case.dir, "ui.token")
    p, url = start_ui(case, m, trace, ["--host", "0.0.0.0", "--token-file", token_file])
    if not case.check("off loopback: prints its address", url, ""):
        p.kill()
        return case
    try:
        base = url.split("?")[0].replace("0.0.0.0", "127.0.0.1")
        token = url.split("token=")[1] if "token=" in url else ""
        case.eq("off loopback: no token, 401", 401, http_status(base + "api/summary")[0])
        case.eq("off loopback: a wrong token, 401", 401,
                http_status(base + "api/summary?token=wrong-token")[0])
        case.eq("off loopback: the token, 200", 200,
                http_status(base + "api/summary?token=" + token)[0])
        with open(token_file) as f:
            case.eq("the token file holds the printed token", token, f.read().strip())
        case.eq("the token file's mode", 0o600, stat.S_IMODE(os.stat(token_file).st_mode))
    finally:
        stop_ui(case, p, "off loopback")
    return case


CASES = [
    ("ui-views", case_views),
    ("ui-window", case_window),
    ("ui-marks", case_marks),
    ("ui-link", case_link),
    ("ui-sampled", case_sampled),
    ("ui-diff", case_diff),
    ("ui-snapshots", case_snapshots),
    ("ui-html", case_html),
    ("ui-html-budget", case_html_budget),
    ("ui-tui", case_tui),
    ("ui-tui-snapshots", case_tui_snapshots),
    ("ui-live", case_live),
    ("ui-live-children", case_live_children),
    ("ui-concurrent", case_concurrent),
    ("ui-errors", case_errors),
]
