"""Integration cases for the views of `memviz report` (--at, --from/--to,
--by, --sort, trees, filters, suppressions, histogram, threads), `memviz
timeline` and `memviz diff`, on tests/programs/phases, whose heap over time
is known exactly (see the comment at the top of phases.c):

    t_b - 400 ms .. t_b     heap = A = 1 MiB          (phase_a, 4 x 256 KiB)
    t_b .. t_b + 400 ms     heap = A + B = 2 MiB      (phase_b, 8 x 128 KiB; the peak)
    t_b + 400 .. t_b + 800  heap = B = 1 MiB          (free_a)
    then the worker thread, small_sizes, free_b, init_cache_once

where t_b is the time of phase_b's last allocation, which is the time of the
peak. Times in the checks are taken 150-250 ms inside these phases.

Every command is also run with the ASan/UBSan build of the CLI, which must
be clean and print the same output.
"""

import json
import os

import run_tests as rt

MiB = 1 << 20
A = 4 * 262144
B1 = 8 * 131072  # phase_b with SCALE = 1


def mvz(case, env, args, label, expect_rc=0):
    """Runs `memviz ARGS` with both builds; returns stdout (bytes) or None."""
    rc, out, err, _ = rt.run([env.memviz] + args, timeout=rt.REPORT_TIMEOUT)
    if not case.check("%s: exit %d" % (label, expect_rc), rc == expect_rc,
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    if env.asan:
        arc, aout, aerr, _ = rt.run([env.asan] + args, timeout=rt.REPORT_TIMEOUT)
        complaint = rt.sanitizer_complaint(aerr)
        case.check("%s: asan build clean and identical" % label,
                   arc == rc and not complaint and aout == out,
                   "%s%s, output %s; stderr: %s" % (
                       rt.rc_str(arc), ", " + complaint if complaint else "",
                       "identical" if aout == out else "differs", rt.tail(aerr, 1500)))
    return out


def mvz_json(case, env, args, label):
    if args[:2] == ["report", "--json"]:  # these cases look at every site
        args = args[:2] + ["--all-sites"] + args[2:]
    out = mvz(case, env, args, label)
    if out is None:
        return None
    try:
        return json.loads(out.decode("utf-8"))
    except ValueError as e:
        case.check("%s: valid JSON" % label, False, str(e))
        return None


def sites_by_function(rep):
    """{innermost function: summed site counts} of a report."""
    out = {}
    for s in rep.get("sites", []):
        fn = s["frames"][0]["function"] if s.get("frames") else "?"
        d = out.setdefault(fn, {"allocations": 0, "allocated_bytes": 0, "at_peak_bytes": 0,
                                "leaked_bytes": 0, "leaked_blocks": 0, "temporary": 0})
        for k in d:
            d[k] += s.get(k, 0)
    return out


def secs(ns):
    return "%.3f" % (ns / 1e9)


def run_phases(case, env, scale, name):
    return rt.memviz_run(case, env, "phases", args=[str(scale)], trace_name=name)


# ---------------------------------------------------------------------------


def case_views_at(env, workroot):
    case = rt.Case("views-at", workroot)
    trace = run_phases(case, env, 1, "phases1")
    rep = trace and rt.report_json(case, env, trace, "phases")
    if not rep:
        return case
    summ = rep["summary"]
    case.eq("peak_bytes = A + B", A + B1, summ["peak_bytes"])
    t_b = summ["peak_time_ns"]
    expect = [(-200, A, {"phase_a": A}), (200, A + B1, {"phase_a": A, "phase_b": B1}),
              (600, B1, {"phase_b": B1})]
    for offset_ms, live, per_fn in expect:
        at = t_b + offset_ms * 10**6
        label = "--at t_b%+d ms" % offset_ms
        r = mvz_json(case, env, ["report", "--json", "--at", secs(at), trace], label)
        if not r:
            continue
        case.eq(label + ": bytes live then", live, r["summary"]["leaked_bytes"])
        case.eq(label + ": window.to_ns (ms precision of --at)", round(at / 1e6) * 10**6,
                r["window"]["to_ns"])
        got = {fn: d["leaked_bytes"] for fn, d in sites_by_function(r).items() if d["leaked_bytes"]}
        case.eq(label + ": live bytes per function", per_fn, got)
        text = mvz(case, env, ["report", "--at", secs(at), trace], label + " text")
        if text is not None:
            t = text.decode()
            case.check(label + " text: lists sites by bytes live then",
                       "Top sites by bytes live at" in t and "phase_" in t, rt.tail(t))
    r = mvz_json(case, env, ["report", "--json", "--at", "peak", trace], "--at peak")
    if r:
        got = {fn: d["at_peak_bytes"] for fn, d in sites_by_function(r).items() if d["at_peak_bytes"]}
        case.eq("--at peak: bytes at the peak per function", {"phase_a": A, "phase_b": B1}, got)
        case.eq("--at peak: window.at", "peak", r["window"]["at"])
    return case


def case_views_window(env, workroot):
    case = rt.Case("views-window", workroot)
    trace = run_phases(case, env, 1, "phases1")
    rep = trace and rt.report_json(case, env, trace, "phases")
    if not rep:
        return case
    t_b = rep["summary"]["peak_time_ns"]
    # The middle of the run: nothing is allocated, free_a releases A; the
    # heap stood at A + B when the window opened, which is its peak.
    lo, hi = t_b + 200 * 10**6, t_b + 600 * 10**6
    r = mvz_json(case, env, ["report", "--json", "--from", secs(lo), "--to", secs(hi), trace],
                 "window around free_a")
    if r:
        s = r["summary"]
        case.eq("window: allocations", 0, s["allocations"])
        case.eq("window: frees (free_a)", 4, s["frees"])
        case.eq("window: peak = heap when it opened", A + B1, s["peak_bytes"])
        case.check("window: peak time within 1 ms of --from", abs(s["peak_time_ns"] - lo) <= 10**6,
                   "peak_time_ns %d, from %d" % (s["peak_time_ns"], lo))
        case.eq("window: nothing allocated in it is live at its end", 0, s["leaked_bytes"])
        got = {fn: d["at_peak_bytes"] for fn, d in sites_by_function(r).items() if d["at_peak_bytes"]}
        case.eq("window: sites at its peak (allocated before it)", {"phase_a": A, "phase_b": B1}, got)
    # From the end of free_a's sleep to the end: the thread and small_sizes.
    r = mvz_json(case, env, ["report", "--json", "--from", secs(t_b + 600 * 10**6), trace],
                 "window to the end")
    if r:
        f = sites_by_function(r)
        case.eq("tail window: worker_churn allocations", 100, f.get("worker_churn", {}).get("allocations"))
        case.eq("tail window: worker_leak leaked", 40960, f.get("worker_leak", {}).get("leaked_bytes"))
        case.eq("tail window: phase_a absent", None, f.get("phase_a"))
        case.eq("tail window: phase_b allocations (before the window)", 0,
                f.get("phase_b", {}).get("allocations"))
        case.eq("tail window: phase_b at the window's peak", B1, f.get("phase_b", {}).get("at_peak_bytes"))
        case.eq("tail window: temporary (worker_churn + small_sizes' last)", 101, r["summary"]["temporary"])
    return case


def find_child(node, fn):
    for c in node.get("children", []):
        if c.get("function") == fn:
            return c
    return None


def find_path(node, fns):
    for fn in fns:
        node = node and find_child(node, fn)
    return node


def case_views_group_tree(env, workroot):
    case = rt.Case("views-group-tree", workroot)
    trace = run_phases(case, env, 1, "phases1")
    rep = trace and rt.report_json(case, env, trace, "phases")
    if not rep:
        return case
    fsum = sites_by_function(rep)
    r = mvz_json(case, env, ["report", "--json", "--by", "function", trace], "--by function")
    if r:
        groups = {g["name"].split("  [")[0]: g for g in r.get("groups", [])}
        case.eq("--by function: small_sizes merges its 3 sites", 3, groups.get("small_sizes", {}).get("sites"))
        case.eq("--by function: small_sizes allocations", 18, groups.get("small_sizes", {}).get("allocations"))
        case.eq("--by function: small_sizes bytes", 10 * 24 + 5 * 100 + 3 * 5000,
                groups.get("small_sizes", {}).get("allocated_bytes"))
        case.eq("--by function: phase_a at peak", A, groups.get("phase_a", {}).get("at_peak_bytes"))
        case.eq("--by function: worker_leak leaked", 40960, groups.get("worker_leak", {}).get("leaked_bytes"))
        case.eq("--by function: group totals = site totals",
                sum(s["allocations"] for s in rep["sites"]), sum(g["allocations"] for g in r["groups"]))
    r = mvz_json(case, env, ["report", "--json", "--by", "file", trace], "--by file")
    if r:
        ph = [g for g in r.get("groups", []) if g["name"].endswith("phases.c")]
        expect = sum(d["allocations"] for fn, d in fsum.items() if fn not in ("calloc",))
        case.eq("--by file: phases.c allocations (all but the DTV)", expect,
                ph[0]["allocations"] if len(ph) == 1 else ph)
    r = mvz_json(case, env, ["report", "--json", "--by", "module", trace], "--by module")
    if r:
        mods = {os.path.basename(g["name"]): g for g in r.get("groups", [])}
        case.eq("--by module: phases allocations", 4 + 8 + 100 + 10 + 18 + 1,
                mods.get("phases", {}).get("allocations"))
    text = mvz(case, env, ["report", "--by", "function", "--sort", "leaked", trace], "--by function text")
    if text is not None:
        t = text.decode()
        case.check("--by function --sort leaked: one list, worker_leak first",
                   "Top functions by bytes not freed:\n  #1  40.00 KiB not freed" in t and
                   t.index("worker_leak") < t.index("init_cache_once") and "Top sites" not in t,
                   rt.tail(t, 1500))
    # Top-down: main -> phase_a / phase_b carry the peak; self = inclusive.
    r = mvz_json(case, env, ["report", "--json", "--tree", "top-down", "--min-percent", "0", trace],
                 "--tree top-down")
    if r:
        root = r["tree"]["root"]
        case.eq("top-down: root inclusive peak = summary peak", rep["summary"]["peak_bytes"],
                root["inclusive"]["peak"])
        case.eq("top-down: root inclusive allocations", rep["summary"]["allocations"],
                root["inclusive"]["allocations"])
        main = find_path(root, ["_start", "__libc_start_main_impl", "__libc_start_call_main", "main"])
        if case.check("top-down: _start > ... > main exists", main is not None):
            case.eq("top-down: main inclusive peak", A + B1, main["inclusive"]["peak"])
            case.eq("top-down: main self peak", 0, main["self"]["peak"])
            pa = find_child(main, "phase_a")
            case.eq("top-down: phase_a incl/self peak", [A, A],
                    pa and [pa["inclusive"]["peak"], pa["self"]["peak"]])
            case.eq("top-down: children of main sorted by peak",
                    True, main["children"][0]["inclusive"]["peak"] >= main["children"][-1]["inclusive"]["peak"])
            case.eq("top-down: main inclusive allocations (main's thread, no DTV)",
                    4 + 8 + 18 + 1 + 1, main["inclusive"]["allocations"])
    r = mvz_json(case, env, ["report", "--json", "--tree", "bottom-up", "--sort", "leaked",
                             "--min-percent", "0", trace], "--tree bottom-up")
    if r:
        root = r["tree"]["root"]
        wl = find_child(root, "worker_leak")
        case.eq("bottom-up: worker_leak leaked", 40960, wl and wl["inclusive"]["leaked"])
        case.eq("bottom-up: worker_leak <- worker_main leaked", 40960,
                wl and (find_child(wl, "worker_main") or {}).get("inclusive", {}).get("leaked"))
        case.eq("bottom-up: sorted by leaked", "worker_leak", root["children"][0].get("function"))
    text = mvz(case, env, ["report", "--tree", "top-down", "--depth", "5", trace], "--tree text")
    if text is not None:
        t = text.decode()
        case.check("tree text: main's line shows 100% inclusive, 0 self",
                   any("100.0%" in l and "(self 0 B)" in l and " main " in l for l in t.splitlines()),
                   rt.tail(t, 1500))
        case.check("tree text: --depth 5 stops at main (no phase_a line)", "phase_a" not in t, rt.tail(t, 1500))
    return case


def case_views_select(env, workroot):
    case = rt.Case("views-select", workroot)
    trace = run_phases(case, env, 1, "phases1")
    rep = trace and rt.report_json(case, env, trace, "phases")
    if not rep:
        return case
    summ = rep["summary"]
    # --filter / --exclude
    r = mvz_json(case, env, ["report", "--json", "--filter", "worker_*", trace], "--filter worker_*")
    if r:
        case.eq("--filter: only worker sites", {"worker_churn", "worker_leak"},
                set(sites_by_function(r)))
        case.eq("--filter: sites_total counts every site", len(rep["sites"]), r["sites_total"])
        case.eq("--filter: summary unchanged", summ["allocations"], r["summary"]["allocations"])
    r = mvz_json(case, env, ["report", "--json", "--exclude", "worker_*", "--exclude", "libc.so*",
                             trace], "--exclude")
    if r:
        fns = set(sites_by_function(r))
        case.check("--exclude: no worker site, no site through libc (all of them)",
                   not fns, "left: %s" % sorted(fns))
    r = mvz_json(case, env, ["report", "--json", "--filter", "*/phases.c", "--exclude", "*worker*", trace],
                 "--filter by file")
    if r:
        # calloc: the thread's DTV, allocated under pthread_create, called from main
        case.eq("--filter by source file, --exclude by function",
                {"phase_a", "phase_b", "small_sizes", "init_cache_once", "calloc"},
                set(sites_by_function(r)))
    # Suppressions: the built-in list catches the thread's DTV, nothing of phases'.
    case.check("default: the DTV is suppressed by the built-in list",
               summ["suppressed_leaked_blocks"] == 1 and any(
                   s["pattern"] == "_dl_allocate_tls" and s["leaked_blocks"] == 1
                   for s in rep["suppressions"]),
               "summary %r, rules %r" % (summ["suppressed_leaked_blocks"], rep["suppressions"]))
    case.eq("default: leaked_bytes still counts suppressed leaks",
            sum(s["leaked_bytes"] for s in rep["sites"]), summ["leaked_bytes"])
    r = mvz_json(case, env, ["report", "--json", "--no-default-suppressions", trace], "no defaults")
    if r:
        case.eq("--no-default-suppressions: nothing suppressed", 0, r["summary"]["suppressed_leaked_bytes"])
    supp = os.path.join(case.dir, "supp.txt")
    for tmpl, hit in (("init_cache_once", True), ("^init_cache", True), ("once$", True),
                      ("init*once", True), ("^cache", False), ("init$", False),
                      ("phases.c", False), ("worker_leak", True)):
        with open(supp, "w") as f:
            f.write("# test rules\n\nrace:whatever\nleak:%s\n" % tmpl)
        r = mvz_json(case, env, ["report", "--json", "--no-default-suppressions", "--suppressions",
                                 supp, trace], "leak:%s" % tmpl)
        if not r:
            continue
        rule = [s for s in r["suppressions"] if s["origin"] == supp]
        if tmpl == "phases.c":
            # a file pattern matches any frame in phases.c: every leak, the
            # DTV too (pthread_create is called from main)
            case.eq("leak:phases.c suppresses every leak", summ["leaked_bytes"],
                    rule and rule[0]["leaked_bytes"])
            continue
        want = (40960 if tmpl == "worker_leak" else 777) if hit else 0
        case.eq("leak:%s suppresses %d bytes" % (tmpl, want), want, rule and rule[0]["leaked_bytes"])
        case.eq("leak:%s: summary.suppressed_leaked_bytes" % tmpl, want,
                r["summary"]["suppressed_leaked_bytes"])
        if hit and tmpl == "init_cache_once":
            text = mvz(case, env, ["report", "--no-default-suppressions", "--suppressions", supp,
                                   trace], "suppressed text")
            if text is not None:
                t = text.decode()
                case.check("text: suppressed leaks listed separately with their rule",
                           "Suppressed leaks" in t and "777 B in 1 block(s) from 1 site(s)  leak:init_cache_once" in t
                           and "suppressed:     777 B" in t, rt.tail(t, 2000))
                leak_list = t.split("Top sites by bytes not freed:")[1].split("Top sites by")[0]
                case.check("text: suppressed site not in the leak list", "init_cache_once" not in leak_list,
                           leak_list)
    with open(supp, "w") as f:
        f.write("leak\n")
    mvz(case, env, ["report", "--suppressions", supp, trace], "malformed suppressions file", expect_rc=2)
    mvz(case, env, ["report", "--suppressions", supp + ".missing", trace], "missing suppressions file",
        expect_rc=2)
    return case


def case_views_hist_threads(env, workroot):
    case = rt.Case("views-hist-threads", workroot)
    trace = run_phases(case, env, 1, "phases1")
    rep = trace and rt.report_json(case, env, trace, "phases")
    if not rep:
        return case
    sizes = {(b["min"], b["max"]): b for b in rep["sizes"]}
    for lo, hi, n, total in ((16, 31, 10, 240), (64, 127, 5, 500), (512, 1023, 101, 100777),
                             (4096, 8191, 13, 55960), (131072, 262143, 8, B1), (262144, 524287, 4, A)):
        b = sizes.get((lo, hi), {})
        case.eq("sizes [%d, %d]: calls and bytes" % (lo, hi), [n, total],
                [b.get("allocations"), b.get("bytes")])
    case.eq("sizes: calls sum to the summary", rep["summary"]["allocations"],
            sum(b["allocations"] for b in rep["sizes"]))
    threads = {t["name"]: t for t in rep["thread_list"]}
    w = threads.get("worker", {})
    case.eq("worker thread", dict(allocations=110, allocated_bytes=140960, frees=100, temporary=100,
                                  at_peak_bytes=0, leaked_bytes=40960, leaked_blocks=10),
            {k: w.get(k) for k in ("allocations", "allocated_bytes", "frees", "temporary",
                                   "at_peak_bytes", "leaked_bytes", "leaked_blocks")})
    main = [t for t in rep["thread_list"] if t["tid"] == rep["process"]["pid"]]
    case.eq("main thread holds the whole peak", A + B1, main[0]["at_peak_bytes"] if main else None)
    case.eq("threads: leaks sum to the summary", rep["summary"]["leaked_bytes"],
            sum(t["leaked_bytes"] for t in rep["thread_list"]))
    text = mvz(case, env, ["report", "--histogram", "--threads", trace], "--histogram --threads")
    if text is not None:
        t = text.decode()
        case.check("text: histogram row for 24-byte allocations",
                   any(l.strip().startswith("[16 B, 32 B)") and " 10 calls " in l and "240 B" in l
                       for l in t.splitlines()), rt.tail(t, 2000))
        case.check("text: threads table has the worker",
                   any(" worker " in l and " 110 " in l and "40.00 KiB" in l for l in t.splitlines()),
                   rt.tail(t, 2000))
    return case


def case_views_timeline(env, workroot, name="views-timeline"):
    case = rt.Case(name, workroot)
    trace = run_phases(case, env, 1, "phases1")
    rep = trace and rt.report_json(case, env, trace, "phases")
    if not rep:
        return case
    t_b = rep["summary"]["peak_time_ns"]
    tl = mvz_json(case, env, ["timeline", "--json", "--points", "120", trace], "timeline --json")
    if tl:
        pts = tl["points"]
        case.eq("120 points", 120, len(pts))
        case.eq("last point at the end of the run", rep["summary"]["duration_ns"], pts[-1]["t_ns"])
        case.eq("highest heap_max = peak", rep["summary"]["peak_bytes"], max(p["heap_max_bytes"] for p in pts))
        names = [s["name"].split(" ")[0] for s in tl["series"]]
        case.eq("series: the two sites at the peak", ["phase_a", "phase_b"], sorted(names[:2]))
        ia, ib = names.index("phase_a") if "phase_a" in names else None, \
            names.index("phase_b") if "phase_b" in names else None
        bad = []
        for p in pts:
            t = p["t_ns"] - t_b
            if -350e6 <= t <= -50e6:
                want = (A, A, 0)
            elif 50e6 <= t <= 350e6:
                want = (A + B1, A, B1)
            elif 450e6 <= t <= 750e6:
                want = (B1, 0, B1)
            else:
                continue
            got = (p["heap_bytes"], p["series"][ia] if ia is not None else None,
                   p["series"][ib] if ib is not None else None)
            if got != want:
                bad.append((t / 1e6, want, got))
        case.check("heap and series follow the phases", not bad, "t_b offset ms, want, got: %r" % bad[:5])
        case.check("some RSS sampled", any(p["rss_bytes"] for p in pts), "")
    csv = mvz(case, env, ["timeline", "--csv", "--points", "10", trace], "timeline --csv")
    if csv is not None:
        lines = csv.decode().splitlines()
        case.check("csv: header and 10 rows", len(lines) == 11 and lines[0].startswith(
            "time_s,heap_bytes,heap_max_bytes,rss_bytes,\"phase_"), repr(lines[:2]))
    chart = mvz(case, env, ["timeline", trace], "timeline chart")
    if chart is not None:
        t = chart.decode()
        rows = [l for l in t.splitlines() if "|" in l or "^" in l]
        case.check("chart: 20 rows with heap columns", len(rows) == 20 and "#" in t, rt.tail(t, 2000))
        top_heap = [l for l in rows if "#" in l][0]
        case.check("chart: the highest heap row covers only the 2 MiB phase",
                   0 < top_heap.count("#") < 72 * 0.6, top_heap)
    r = mvz_json(case, env, ["timeline", "--json", "--points", "4", "--from", secs(t_b + 100 * 10**6),
                             "--to", secs(t_b + 300 * 10**6), trace], "timeline window")
    if r:
        case.eq("window: every point has heap A + B", [A + B1] * 4, [p["heap_bytes"] for p in r["points"]])
    return case


def case_views_diff(env, workroot):
    case = rt.Case("views-diff", workroot)
    base = run_phases(case, env, 1, "phases1")
    new = run_phases(case, env, 2, "phases2")
    if not base or not new:
        return case
    d = mvz_json(case, env, ["diff", "--json", base, new], "diff --json")
    if d:
        s = d["summary"]
        case.eq("summary: peak grew by B", [A + B1, A + 2 * B1, B1],
                [s["peak_bytes"]["base"], s["peak_bytes"]["new"], s["peak_bytes"]["delta"]])
        case.eq("summary: 8 more calls", 8, s["allocations"]["delta"])
        case.eq("summary: leaks unchanged", 0, s["leaked_bytes"]["delta"])
        f = d["functions"]
        case.eq("functions: phase_b first (regressions first)", "phase_b", f and f[0]["function"].split("  [")[0])
        if f:
            case.eq("functions: phase_b peak and calls",
                    [[B1, 2 * B1, B1], [8, 16, 8]],
                    [[f[0]["peak"][k] for k in ("base", "new", "delta")],
                     [f[0]["allocations"][k] for k in ("base", "new", "delta")]])
        case.eq("functions: only phase_b changed", 1, len(f))
        st = d["sites"]
        case.check("sites: phase_b's stack, outermost _start",
                   len(st) == 1 and st[0]["frames"][0].startswith("phase_b") and
                   st[0]["frames"][-1].startswith("_start"), repr(st)[:400])
    d = mvz_json(case, env, ["diff", "--json", "--sort", "allocations", new, base], "reverse diff")
    if d:
        f = d["functions"]
        case.eq("reverse: phase_b shrank by 8 calls", -8, f and f[-1]["allocations"]["delta"])
    text = mvz(case, env, ["diff", base, new], "diff text")
    if text is not None:
        t = text.decode()
        grew = t.split("Functions that grew")[1].split("Functions that shrank")[0]
        case.check("text: phase_b under 'Functions that grew' with +1.00 MiB",
                   "phase_b" in grew and "+1.00 MiB" in grew, rt.tail(t, 2000))
        case.check("text: nothing shrank", "that shrank, by contribution to the peak:\n  (none)" in t,
                   rt.tail(t, 2000))
    same = mvz_json(case, env, ["diff", "--json", base, base], "diff with itself")
    if same:
        case.eq("a trace against itself: no changes", [[], []], [same["functions"], same["sites"]])
    return case


def case_views_usage(env, workroot):
    case = rt.Case("views-usage", workroot)
    trace = os.path.join(case.dir, "none.mvz")
    for args in (["report", "--at", "soon", trace], ["report", "--by", "color", trace],
                 ["report", "--tree", "sideways", trace], ["report", "--sort", "size", trace],
                 ["report", "--from", "2", "--to", "1", trace], ["report", "--at", "1", "--from", "0", trace],
                 ["report", "--min-percent", "101", trace], ["report", "--depth", "0", trace],
                 ["diff", trace], ["diff", "--sort", "x", trace, trace], ["timeline", "--points", "0", trace],
                 ["timeline", "--from", "-1", trace], ["export", "--format", "svg", trace],
                 ["export", trace]):
        rc, out, err, _ = rt.run([env.memviz] + args)
        lines = err.decode().strip().splitlines()
        case.check("%s: exit 2, usage message" % " ".join(args[:-1]),
                   rc == 2 and lines and lines[0].startswith("memviz ") and not out,
                   "%s; stderr %r" % (rt.rc_str(rc), lines))
    for args in (["timeline", trace], ["diff", trace, trace]):
        rc, out, err, _ = rt.run([env.memviz] + args)
        case.check("%s on a missing file: exit 1, one line" % args[0],
                   rc == 1 and len(err.decode().strip().splitlines()) == 1, "%s; %r" % (rt.rc_str(rc), err))
    return case


def case_views_timeline_no_tsc(env, workroot):
    """The same times without the time-stamp counter: the keys from the global
    counter are the events' times then (record.c), so phases' sleeps must show
    where they are."""
    with rt.agent_env("MEMVIZ_CLOCK", "monotonic"):
        return case_views_timeline(env, workroot, "views-timeline-no-tsc")


CASES = [
    ("views-at", case_views_at),
    ("views-window", case_views_window),
    ("views-group-tree", case_views_group_tree),
    ("views-select", case_views_select),
    ("views-hist-threads", case_views_hist_threads),
    ("views-timeline", case_views_timeline),
    ("views-timeline-no-tsc", case_views_timeline_no_tsc),
    ("views-diff", case_views_diff),
    ("views-usage", case_views_usage),
]
