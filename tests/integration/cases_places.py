"""The heap map at any moment and the heat map (`memviz run --addresses`,
docs/UI.md): tests/programs/placed prints the address and size of every
block it makes, frees and moves; at each of its phases the server's map
must hold exactly those blocks, at those addresses, with those sizes; its
browser views are driven in Debian's headless chromium by
web/test/places_check.mjs."""
import json
import os
import urllib.parse

import run_tests as rt
from cases_ui import traced, browser_ready, http_status, start_ui, stop_ui

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "web", "test", "places_check.mjs")
CELLS = 65536


def expected_phases(out):
    """{phase: {addr: size}} from placed's output."""
    live, phases = {}, {}
    lines = out.decode().split("\n")
    for kind, name in (("A", "grown"), ("F", "thinned"), ("R", "moved")):
        for ln in lines:
            f = ln.split()
            if not f or f[0] != kind:
                continue
            if kind == "A":
                live[int(f[1], 16)] = int(f[2])
            elif kind == "F":
                live.pop(int(f[1], 16))
            else:
                live.pop(int(f[1], 16))
                live[int(f[2], 16)] = int(f[3])
        phases[name] = dict(live)
    return phases


def api(case, url, path, **params):
    q = urllib.parse.urlencode(params)
    status, body = http_status("%s%s?%s" % (url.rstrip("/"), path, q))
    if not case.check("%s?%s answers 200" % (path, q), status == 200, "%s: %s" % (status, body[:300])):
        return None
    return json.loads(body)


def cell_of(doc, addr):
    """The cell holding address addr in a map's layout."""
    start, first = doc["regions"][0]
    for s, c in doc["regions"]:
        if s <= addr:
            start, first = s, c
    return first + (addr - start) // doc["cell_bytes"]


def check_moment(case, url, label, t, live, everyone):
    """The map at t: each of live's blocks under its cell; the others not."""
    doc = api(case, url, "/api/heapmap", t=t, cells=CELLS)
    if not doc:
        return
    case.check("%s: the map holds the program's %d blocks (and the runtime's)" % (label, len(live)),
               doc["blocks"] >= len(live) and doc["blocks"] <= len(live) + 4,
               "%d blocks" % doc["blocks"])
    wrong = []
    for addr in sorted(everyone):
        size = live.get(addr, everyone[addr])
        cell = cell_of(doc, addr + size // 2)
        status, body = http_status("%s/api/heapmap/block?t=%d&cells=%d&cell=%d" % (
            url.rstrip("/"), t, CELLS, cell))
        if status != 200:
            wrong.append("cell %d: %s %s" % (cell, status, body[:100]))
            continue
        b = json.loads(body)
        if addr in live and (b.get("addr"), b.get("size")) != (addr, size):
            wrong.append("0x%x/%d: %s" % (addr, size, (b.get("addr"), b.get("size"))))
        if addr not in live and b.get("addr") == addr:
            wrong.append("0x%x freed but shown" % addr)
    case.eq("%s: every block the program named, at its address and size" % label, [], wrong[:5])


def trace_placed(case, env, name, extra_env=None):
    trace = os.path.join(case.dir, name + ".mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "--addresses", "-o", trace, env.prog("placed")],
                             env=dict(os.environ, **(extra_env or {})))
    if not case.check("%s traced with --addresses" % name, rc == 0, rt.tail(err)):
        return None, None
    return trace, expected_phases(out)


def check_trace(case, env, trace, phases, label):
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("%s: memviz ui prints its address" % label, url, ""):
        p.kill()
        return None
    try:
        tl = api(case, url, "/api/timeline")
        marks = {m[2]: m[0] for m in (tl or {}).get("marks", []) if m[1] == "P"}
        case.eq("%s: the three phases are marked" % label, ["grown", "moved", "thinned"],
                sorted(marks))
        everyone = {}
        for ph in phases.values():
            everyone.update(ph)
        for name in ("grown", "thinned", "moved"):
            if name in marks:
                check_moment(case, url, "%s at %s" % (label, name), marks[name], phases[name],
                             everyone)
        return url, p
    except Exception:
        stop_ui(case, p, label)
        raise


def check_whole_run(case, env, url, trace):
    """The frames' last and the heat map's last slice against report --json."""
    rep = rt.report_json(case, env, trace, "placed")
    frames = api(case, url, "/api/heapmap/frames", frames=10, cells=1024)
    end = api(case, url, "/api/heapmap", t=10 ** 15, cells=1024)
    heat = api(case, url, "/api/heatmap", slices=50, cells=128)
    if not (rep and frames and end and heat):
        return
    s = rep["summary"]
    case.eq("the map at the end: the blocks report --json says leaked", s["leaked_blocks"],
            end["blocks"])
    case.eq("the map at the end: their bytes", s["leaked_bytes"], end["bytes"])
    case.eq("frames: 10 of them", 10, len(frames["times"]))
    case.eq("frames: the last has the blocks live at the end", s["leaked_blocks"],
            frames["blocks"][-1])
    case.check("frames: times ascend to the end", frames["times"] == sorted(frames["times"]) and
               frames["times"][-1] == frames["end_ns"], repr(frames["times"]))
    case.eq("heat map: 50 slices of 128-odd cells", [50, True],
            [len(heat["live_bytes"]), all(len(r) == heat["cells"] for r in heat["live_bytes"])])
    case.eq("heat map: the live bytes of the last slice are those at the end", s["leaked_bytes"],
            sum(heat["live_bytes"][-1]))
    placed = sum(sum(r) for r in heat["allocations"])
    case.check("heat map: every allocation counted in a cell at least once",
               placed >= s["allocations"], "%d cell-allocations, %d allocations" %
               (placed, s["allocations"]))


def run_places_check(case, url):
    argv = ["node", CHECK, url]
    shots = os.environ.get("MEMVIZ_UI_SHOTS")
    if shots:
        argv.append(shots)
    rc, out, err, _ = rt.run(argv, timeout=120)
    if not case.check("places_check.mjs exits 0", rc == 0, "%s; %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    try:
        return json.loads(out.decode())
    except ValueError as e:
        case.check("places_check.mjs prints JSON", False, "%s: %s" % (e, rt.tail(out)))
        return None


def check_browser(case, url, standalone=False):
    seen = run_places_check(case, url)
    if not seen:
        return
    case.check("the browser ran every step", "error" not in seen, seen.get("error", ""))
    case.eq("no console errors", [], seen.get("console_errors"))
    case.eq("no page errors", [], seen.get("page_errors"))
    case.eq("no failed requests", [], seen.get("failed_requests"))
    case.check("the heap map offers the moments", "moments" in (seen.get("options") or []),
               repr(seen.get("options")))
    mid = seen.get("middle") or {}
    case.check("the middle moment: slider shown, cells painted, sites listed",
               not mid.get("hidden") and mid.get("painted", 0) > 0 and mid.get("legend", 0) > 0,
               repr(mid))
    hover = (mid.get("hover") or {}).get("text", "")
    if standalone:
        case.check("hovering a painted cell: the file says the block needs memviz ui",
                   "needs memviz ui" in hover, repr(hover))
    else:
        case.check("hovering a painted cell names a block, its age and stack",
                   " at 0x" in hover and " old " in hover and "allocated at " in hover, repr(hover))
    case.eq("Play ends at the last frame", seen.get("frames", 0) - 1,
            (seen.get("played") or {}).get("slider"))
    ha, hl = seen.get("heat_allocations") or {}, seen.get("heat_live") or {}
    case.check("heat map by allocations: hot squares", ha.get("hot", 0) > 0, repr(ha))
    case.check("heat map by live bytes: hot squares, a darkest value in bytes",
               hl.get("hot", 0) > 0 and hl.get("max", 0) >= 4096, repr(hl))
    case.check("heat map: a time axis from 0 to the end, and the regions' addresses",
               (ha.get("axis") or [""])[0] == "0" and len(ha.get("axis") or []) == 3 and
               (ha.get("axis") or ["", "", ""])[2] not in ("", "0") and
               (ha.get("regions") or "").startswith("regions: 0x"), repr(ha))
    case.check("heat map hover names an address and a slice",
               (seen.get("heat_hover") or {}).get("text", "").startswith("0x"),
               repr(seen.get("heat_hover")))


def case_places(env, workroot):
    case = rt.Case("ui-places", workroot)
    trace, phases = trace_placed(case, env, "placed")
    if not trace:
        return case
    got = check_trace(case, env, trace, phases, "placed")
    if not got:
        return case
    url, p = got
    try:
        check_whole_run(case, env, url, trace)
        if browser_ready(case):
            check_browser(case, url)
    finally:
        stop_ui(case, p, "placed")
    html = os.path.join(case.dir, "placed.html")
    rc, _, err, _ = rt.run([env.memviz, "html", "-o", html, trace], timeout=120)
    if case.check("memviz html of it", rc == 0, rt.tail(err)) and browser_ready(case):
        check_browser(case, "file://" + html, standalone=True)
    check_html_devices(case, env, trace)
    return case


def check_html_devices(case, env, trace):
    """-o to a device writes into it, never renames a file over it."""
    rc, out, err, _ = rt.run([env.memviz, "html", "-o", "/dev/stdout", trace], timeout=120)
    case.check("memviz html -o /dev/stdout: the page alone on standard output",
               rc == 0 and out.lstrip().lower().startswith(b"<!doctype html") and
               out.rstrip().endswith(b"</html>"), "%s; %s" % (rt.rc_str(rc), rt.tail(err)))
    rc, out, err, _ = rt.run([env.memviz, "html", "-o", "/dev/null", trace], timeout=120)
    import stat
    case.check("memviz html -o /dev/null: exit 0, and /dev/null is still a device",
               rc == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode),
               "%s; %s" % (rt.rc_str(rc), rt.tail(err)))


def case_places_grouped(env, workroot):
    """The same with every time unit's events written thread by thread
    (MEMVIZ_GROUPS=always): the addresses follow the written order."""
    case = rt.Case("ui-places-grouped", workroot)
    trace, phases = trace_placed(case, env, "grouped", {"MEMVIZ_GROUPS": "always"})
    if not trace:
        return case
    got = check_trace(case, env, trace, phases, "grouped")
    if got:
        stop_ui(case, got[1], "grouped")
    return case


def case_places_errors(env, workroot):
    """A trace without addresses, and bad queries."""
    case = rt.Case("ui-places-errors", workroot)
    trace = os.path.join(case.dir, "plain.mvz")
    rc, _, err, _ = rt.run([env.memviz, "run", "-o", trace, env.prog("placed")])
    if not case.check("placed traced without --addresses", rc == 0, rt.tail(err)):
        return case
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        for path in ("/api/heatmap", "/api/heapmap/frames", "/api/heapmap?t=1000"):
            status, body = http_status(url.rstrip("/") + path)
            case.check("%s of a trace without addresses: 404 naming --addresses" % path,
                       status == 404 and b"--addresses" in body, "%s: %s" % (status, body[:200]))
        for path in ("/api/heapmap?t=abc", "/api/heapmap/block?t=5", "/api/heatmap?slices=0",
                     "/api/heatmap?cells=5000", "/api/heapmap/frames?frames=999"):
            status, body = http_status(url.rstrip("/") + path)
            case.check("%s: 400 with a reason" % path, status == 400 and body.strip(),
                       "%s: %s" % (status, body[:200]))
    finally:
        stop_ui(case, p, "no addresses")
    return case


CASES = [
    ("ui-places", case_places),
    ("ui-places-grouped", case_places_grouped),
    ("ui-places-errors", case_places_errors),
]
