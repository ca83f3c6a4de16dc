"""Integration cases for the exports of `memviz export` that carry time or a
call graph: massif (Valgrind Massif's massif.out), callgrind and chrome (the
Trace Event Format's JSON).

Each case runs tests/programs/phases under `memviz run`. Its heap over time is
known (see the top of phases.c): 1 MiB (phase_a) from the start, 2 MiB once
phase_b ran (the peak, held for 400 ms), 1 MiB after free_a (400 ms), then a
short worker thread and small allocations, and 42,041 bytes live at the end
(report's leaked bytes). The export is fed to the real tool that reads it:

  export-time-massif     ms_print (Debian's valgrind) prints the graph, the
                         snapshot table and the peak's tree: the peak, the
                         tree entries of phase_a and phase_b (1,048,576 bytes
                         each) and the heap over time are checked, and a
                         strict parser of the massif.out grammar (what
                         massif-visualizer accepts) checks every line and the
                         tree's sums. Then two --from/--to windows: one around
                         the peak, one after free_a (peak 1 MiB: phase_b only).
  export-time-callgrind  callgrind_annotate: its totals and per-function self
                         costs against `memviz report --json` of the same trace
                         and phases.c; with --inclusive=yes every function's
                         inclusive costs (main, worker_main, ...) against the
                         sum of the sites whose stack holds it, and on
                         tests/programs/recursion that a recursive function is
                         counted once per stack.
  export-time-chrome     no maintained program reads a Chrome JSON trace's
                         counters headlessly (Perfetto's trace processor is not
                         packaged for Debian or npm; @paulirish/trace_engine,
                         DevTools' model on npm, reads only Chrome's own
                         counters), so a strict checker: every event has the
                         fields its phase requires, counter timestamps never go
                         back, the heap counter's maximum is the report's peak
                         and its values at known times follow phases.c; then a
                         window.

Every export is also made by the ASan/UBSan build, which must be clean and
write the same bytes.
"""

import json
import os
import re

import run_tests as rt

MIB = 1048576
# phases.c: (function at frames[0]) -> its sites' (allocations, allocated_bytes,
# at_peak_bytes, leaked_bytes, leaked_blocks, temporary).
PHASES_SELF = {
    "phase_a": (4, 4 * 262144, 4 * 262144, 0, 0, 0),
    "phase_b": (8, 8 * 131072, 8 * 131072, 0, 0, 0),
    "worker_churn": (100, 100 * 1000, 0, 0, 0, 100),
    "worker_leak": (10, 10 * 4096, 0, 10 * 4096, 10, 0),
    "small_sizes": (18, 10 * 24 + 5 * 100 + 3 * 5000, 0, 0, 0, 1),
    "init_cache_once": (1, 777, 0, 777, 1, 0),
}
EVENTS = ("Allocations", "AllocBytes", "PeakBytes", "LeakedBytes", "LeakedBlocks", "Temporary")
SITE_KEYS = ("allocations", "allocated_bytes", "at_peak_bytes", "leaked_bytes", "leaked_blocks",
             "temporary")
SUMMARY_KEYS = ("allocations", "allocated_bytes", "peak_bytes", "leaked_bytes", "leaked_blocks",
                "temporary")


# ---------------------------------------------------------------------------
# Shared


def run_traced(case, env, prog):
    """Traces prog and returns (trace, report) or (None, None)."""
    trace = rt.memviz_run(case, env, prog, stdout=None)
    if not trace:
        return None, None
    rep = rt.report_json(case, env, trace, prog)
    return (trace, rep) if rep is not None else (None, None)


def export(case, env, trace, fmt, out, args=(), label=None):
    """`memviz export --format FMT -o OUT ARGS TRACE`, and the same with the
    ASan build, which must be clean and write the same bytes. Returns the
    output's text or None."""
    label = label or fmt
    cmd = ["export", "--format", fmt, "-o", out] + list(args) + [trace]
    rc, _, err, _ = rt.run([env.memviz] + cmd, timeout=rt.REPORT_TIMEOUT)
    if not case.check("%s: export exits 0, writes %s" % (label, os.path.basename(out)),
                      rc == 0 and os.path.isfile(out) and os.path.getsize(out) > 0,
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    with open(out, "rb") as f:
        data = f.read()
    if env.asan:
        aout = out + ".asan"
        rc, _, aerr, _ = rt.run([env.asan] + cmd[:4] + [aout] + cmd[5:], timeout=rt.REPORT_TIMEOUT)
        complaint = rt.sanitizer_complaint(aerr)
        same = os.path.isfile(aout) and open(aout, "rb").read() == data
        case.check("%s: asan export exits 0, clean, identical" % label,
                   rc == 0 and not complaint and same,
                   "%s%s, output %s; stderr: %s" % (rt.rc_str(rc), ", " + complaint if complaint else "",
                                                   "identical" if same else "differs",
                                                   rt.tail(aerr, 1500)))
    return data.decode("utf-8", "replace")


def us(ns):
    """A window bound as memviz gets it: window_args passes whole microseconds."""
    return int(float("%.6f" % (ns / 1e9)) * 1e6 + 0.5)


def window_args(lo_ns, hi_ns):
    return ["--from", "%.6f" % (lo_ns / 1e9), "--to", "%.6f" % (hi_ns / 1e9)]


def report_window(case, env, trace, args, label):
    """`memviz report --json --from --to`: the window's summary, or None."""
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--all-sites"] + args + [trace],
                             timeout=rt.REPORT_TIMEOUT)
    if not case.check("%s: report --json of the window exits 0" % label, rc == 0,
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    try:
        return json.loads(out.decode("utf-8"))["summary"]
    except (ValueError, KeyError, UnicodeDecodeError) as e:
        case.check("%s: report --json of the window parses" % label, False, repr(e))
        return None


def runs(values):
    """[(value, first index, last index)] of consecutive equal values."""
    out = []
    for i, v in enumerate(values):
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1], i)
        else:
            out.append((v, i, i))
    return out


def plateaus(values):
    """runs(values) without a lone sample strictly between its neighbours:
    a sample that fell while phase_b's (or free_a's) blocks were being
    allocated (freed), tens of microseconds out of a 12 ms step."""
    r = runs(values)
    return [x for i, x in enumerate(r)
            if not (0 < i < len(r) - 1 and x[1] == x[2]
                    and min(r[i - 1][0], r[i + 1][0]) < x[0] < max(r[i - 1][0], r[i + 1][0]))]


# ---------------------------------------------------------------------------
# massif


SNAP_FIELDS = ("snapshot", "time", "mem_heap_B", "mem_heap_extra_B", "mem_stacks_B", "heap_tree")
ROOT_LABEL = "(heap allocation functions) malloc/new/new[], --alloc-fns, etc."
FRAME_LABEL = re.compile(r"^0x[0-9A-F]+: \S.*$")
BELOW_LABEL = re.compile(r"^in (\d+) places?, (?:all )?below massif's threshold \(1\.00%\)$")
TREE_LINE = re.compile(r"^( *)n(\d+): (\d+) (.+)$")
MS_TIME = re.compile(r"^(\d+)\.(\d{3})$")  # milliseconds, to the microsecond


def ms_to_us(text):
    """'1,201.638' (ms) -> 1201638 (us)."""
    m = MS_TIME.match(text.replace(",", ""))
    if not m:
        raise ValueError("time %r is not milliseconds with 3 decimals" % text)
    return int(m.group(1)) * 1000 + int(m.group(2))


class MassifError(Exception):
    pass


def parse_tree(lines, pos, depth, total, probs):
    """Reads the node at lines[pos] (indented by depth): (node, next pos).
    A node is {"bytes", "label", "children"}; the sums and Massif's ordering
    and threshold are checked on the way into probs."""
    m = TREE_LINE.match(lines[pos]) if pos < len(lines) else None
    if not m or len(m.group(1)) != depth:
        raise MassifError("line %d: expected a tree node at depth %d, got %r" % (
            pos + 1, depth, lines[pos] if pos < len(lines) else "end of file"))
    node = {"bytes": int(m.group(3)), "label": m.group(4), "children": []}
    pos += 1
    for _ in range(int(m.group(2))):
        child, pos = parse_tree(lines, pos, depth + 1, total, probs)
        node["children"].append(child)
    kids = node["children"]
    label = node["label"]
    if depth == 0 and label != ROOT_LABEL:
        probs.append("root label %r" % label)
    if depth > 0 and not (FRAME_LABEL.match(label) or BELOW_LABEL.match(label)
                          or label == "(the recorded stack ends here)"):
        probs.append("line %d: label %r" % (pos, label))
    if kids and sum(k["bytes"] for k in kids) != node["bytes"]:
        probs.append("line %d: %d bytes but children sum to %d" % (
            pos, node["bytes"], sum(k["bytes"] for k in kids)))
    named = [k for k in kids if not BELOW_LABEL.match(k["label"])]
    below = [k for k in kids if BELOW_LABEL.match(k["label"])]
    if [k["bytes"] for k in named] != sorted((k["bytes"] for k in named), reverse=True):
        probs.append("line %d: children not sorted by bytes" % pos)
    if any(k["bytes"] * 100 < total for k in named):
        probs.append("line %d: a child below 1%% of %d is not summarized" % (pos, total))
    if len(below) > 1 or (below and kids[-1] is not below[0]):
        probs.append("line %d: the below-threshold line must be one, and last" % pos)
    return node, pos


def parse_massif(text):
    """Parses massif.out as massif-visualizer does (exact header lines and
    snapshot separators, depth-indented trees). Returns (header, snapshots,
    problems); raises MassifError when the file cannot be read at all."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 3 or not lines[0].startswith("desc: ") or not lines[1].startswith("cmd: ") \
            or lines[2] != "time_unit: ms":
        raise MassifError("header: %r" % lines[:3])
    snaps, probs, pos = [], [], 3
    while pos < len(lines):
        if lines[pos] != "#-----------" or pos + 8 > len(lines) or lines[pos + 2] != "#-----------":
            raise MassifError("line %d: expected a snapshot separator, got %r" % (pos + 1, lines[pos]))
        body = [lines[pos + 1]] + lines[pos + 3:pos + 8]
        snap = {}
        for field, line in zip(SNAP_FIELDS, body):
            if not line.startswith(field + "="):
                raise MassifError("expected %s=, got %r" % (field, line))
            v = line[len(field) + 1:]
            snap[field] = v if field == "heap_tree" else ms_to_us(v) if field == "time" else int(v)
        pos += 8
        if snap["heap_tree"] in ("peak", "detailed"):
            snap["tree"], pos = parse_tree(lines, pos, 0, snap["mem_heap_B"], probs)
            if snap["tree"]["bytes"] != snap["mem_heap_B"]:
                probs.append("snapshot %d: tree total %d != mem_heap_B %d" % (
                    snap["snapshot"], snap["tree"]["bytes"], snap["mem_heap_B"]))
        elif snap["heap_tree"] != "empty":
            raise MassifError("heap_tree=%r" % snap["heap_tree"])
        snaps.append(snap)
    return lines[:3], snaps, probs


def top_entries(tree, func):
    """Bytes of the root's children whose frame is func."""
    pat = re.compile(r"^0x[0-9A-F]+: %s \(" % re.escape(func))
    return [k["bytes"] for k in tree["children"] if pat.match(k["label"])]


def check_massif_file(case, text, label, rep_summary):
    """The strict parse; returns (snapshots, peak snapshot) or (None, None).
    Snapshot times are in microseconds."""
    try:
        _, snaps, probs = parse_massif(text)
    except (MassifError, ValueError) as e:
        case.check("%s: massif.out follows the grammar" % label, False, str(e))
        return None, None
    case.check("%s: massif.out follows the grammar, trees sum up" % label, not probs,
               "; ".join(probs[:5]))
    nums = [s["snapshot"] for s in snaps]
    times = [s["time"] for s in snaps]
    case.eq("%s: snapshots numbered 0.." % label, list(range(len(snaps))), nums)
    case.check("%s: snapshot times never go back" % label, times == sorted(times), repr(times[:20]))
    case.check("%s: no extra-heap or stack figures" % label,
               all(s["mem_heap_extra_B"] == 0 and s["mem_stacks_B"] == 0 for s in snaps), "")
    peaks = [s for s in snaps if s["heap_tree"] == "peak"]
    if not case.eq("%s: one peak snapshot" % label, 1, len(peaks)):
        return snaps, None
    peak = peaks[0]
    case.eq("%s: peak snapshot's mem_heap_B == report peak_bytes" % label, rep_summary["peak_bytes"],
            peak["mem_heap_B"])
    case.eq("%s: peak snapshot's time == report peak_time_ns (us)" % label,
            rep_summary["peak_time_ns"] // 1000, peak["time"])
    case.eq("%s: no snapshot above the peak" % label, peak["mem_heap_B"],
            max(s["mem_heap_B"] for s in snaps))
    return snaps, peak


MS_ROW = re.compile(r"^\s*(\d+)\s+([\d,]+\.\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s*$")
MS_TOP = re.compile(r"^->(\d+\.\d\d)% \(([\d,]+)B\) 0x[0-9A-F]+: (\S+) \(")


def num(s):
    return int(s.replace(",", ""))


def ms_print(case, env, path, label):
    """Runs ms_print: returns (rows, peak number, {function: [bytes]} of the
    peak tree's first level, root bytes), or None. A row is (time in us,
    total, useful heap, extra heap, stacks)."""
    rc, out, err, _ = rt.run(["ms_print", path])
    text = out.decode("utf-8", "replace")
    if not case.check("%s: ms_print exits 0, says nothing on stderr" % label, rc == 0 and not err,
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    m = re.search(r"Detailed snapshots: \[(\d+) \(peak\)\]", text)
    if not case.check("%s: ms_print names the peak snapshot" % label, m, rt.tail(text, 300)):
        return None
    rows = {}
    for line in text.splitlines():
        r = MS_ROW.match(line)
        if r:
            rows[int(r.group(1))] = (ms_to_us(r.group(2)),) + tuple(num(g) for g in r.groups()[2:])
    top = {}
    for line in text.splitlines():
        t = MS_TOP.match(line)
        if t:
            top.setdefault(t.group(3), []).append(num(t.group(2)))
    root = re.search(r"^100\.00% \(([\d,]+)B\) \(heap allocation functions\)", text, re.M)
    return [rows[k] for k in sorted(rows)], int(m.group(1)), top, num(root.group(1)) if root else None


def check_ms_print_full(case, env, path, rep):
    """The whole run: peak, tree entries and the shape of the heap over time."""
    summ = rep["summary"]
    got = ms_print(case, env, path, "massif")
    if not got:
        return
    rows, peak_num, top, root = got
    case.eq("massif: ms_print lists 50..110 snapshots", (50, 110), len(rows))
    case.eq("massif: report peak_bytes is phases.c's 2 MiB", 2 * MIB, summ["peak_bytes"])
    case.eq("massif: ms_print's peak snapshot total == report peak_bytes", summ["peak_bytes"],
            rows[peak_num][1] if peak_num < len(rows) else None)
    case.eq("massif: ms_print's tree root is the peak", summ["peak_bytes"], root)
    case.eq("massif: ms_print's tree: phase_a, phase_b hold 1,048,576 bytes each",
            {"phase_a": [MIB], "phase_b": [MIB]}, {f: top.get(f) for f in ("phase_a", "phase_b")})
    # The shape: 0 at time 0, then 1 MiB until phase_b, 2 MiB for 400 ms, 1 MiB
    # for 400 ms after free_a; later only the worker's and small_sizes' few KiB
    # on top of B, and at the end what leaked.
    totals = [r[1] for r in rows]
    times = [r[0] for r in rows]
    shape = plateaus(totals)
    case.eq("massif: heap over time starts 0, 1 MiB, 2 MiB, 1 MiB",
            [0, MIB, 2 * MIB, MIB], [v for v, _, _ in shape[:4]])
    if len(shape) >= 4:
        spans = [(times[b] - times[a]) // 1000 for _, a, b in shape[1:4]]
        # each plateau lasts ~400 ms: sampled every ~12 ms, so >= 400 - 2 steps
        case.check("massif: the 1 MiB, 2 MiB and 1 MiB plateaus last >= 360 ms each",
                   all(s >= 360 for s in spans), "spans %r ms" % spans)
        case.check("massif: the peak snapshot is in the 2 MiB plateau",
                   shape[2][1] <= peak_num <= shape[2][2], "peak %d, plateau %r" % (peak_num, shape[2]))
    case.eq("massif: last snapshot: what leaked, at the end of the run",
            [summ["leaked_bytes"], summ["duration_ns"] // 1000], [totals[-1], times[-1]])


def check_massif_window(case, env, trace, rep, lo, hi, expect_peak, expect_top, label):
    """A --from/--to window: its peak (also from report --from/--to) and tree."""
    args = window_args(lo, hi)
    path = os.path.join(case.dir, label + ".massif")
    text = export(case, env, trace, "massif", path, args, label)
    wsum = report_window(case, env, trace, args, label)
    if text is None or wsum is None:
        return
    case.eq("%s: report's window peak is the known one" % label, expect_peak, wsum["peak_bytes"])
    snaps, peak = check_massif_file(case, text, label, wsum)
    if snaps:
        case.check("%s: every snapshot lies in the window" % label,
                   all(us(lo) <= s["time"] <= us(hi) for s in snaps),
                   "window %d..%d us, times %r" % (us(lo), us(hi),
                                                   [s["time"] for s in snaps][:10]))
    if peak:
        case.eq("%s: peak tree's functions (first level)" % label, expect_top,
                {f: top_entries(peak["tree"], f) for f in ("phase_a", "phase_b")})
    got = ms_print(case, env, path, label)
    if got:
        rows, peak_num, top, root = got
        case.eq("%s: ms_print's peak == the window's peak" % label, expect_peak,
                rows[peak_num][1] if peak_num < len(rows) else None)
        case.eq("%s: ms_print's tree, first level" % label, expect_top,
                {f: top.get(f, []) for f in ("phase_a", "phase_b")})
    return snaps


def case_massif(env, workroot):
    case = rt.Case("export-time-massif", workroot)
    trace, rep = run_traced(case, env, "phases")
    if not trace:
        return case
    path = os.path.join(case.dir, "phases.massif")
    text = export(case, env, trace, "massif", path)
    if text is not None:
        _, peak = check_massif_file(case, text, "massif", rep["summary"])
        if peak:
            case.eq("massif: peak tree: phase_a, phase_b at the first level",
                    {"phase_a": [MIB], "phase_b": [MIB]},
                    {f: top_entries(peak["tree"], f) for f in ("phase_a", "phase_b")})
        check_ms_print_full(case, env, path, rep)
    tp = rep["summary"]["peak_time_ns"]
    # Around the peak: A and B live, nothing else (phases.c allocates nothing
    # else in main's thread before the worker).
    check_massif_window(case, env, trace, rep, tp - 200000000, tp + 200000000, 2 * MIB,
                        {"phase_a": [MIB], "phase_b": [MIB]}, "massif-window-peak")
    # After free_a (>= 400 ms after the peak) and before the worker (>= 800 ms
    # after): only B, 1 MiB, all the time; the window's peak is its start.
    snaps = check_massif_window(case, env, trace, rep, tp + 600000000, tp + 780000000, MIB,
                                {"phase_a": [], "phase_b": [MIB]}, "massif-window-after-free_a")
    if snaps:
        case.eq("massif-window-after-free_a: every snapshot holds 1 MiB", {MIB},
                {s["mem_heap_B"] for s in snaps})
    # A window that starts after the run ended is refused, in one line.
    rc, out, err, _ = rt.run([env.memviz, "export", "--format", "massif", "--from", "1000", trace])
    case.check("massif: a window after the end of the run: exit 1, one 'memviz:' line",
               rc == 1 and not out and err.decode("utf-8", "replace").startswith("memviz: ")
               and err.count(b"\n") == 1, "%s; stdout %r; stderr %r" % (rt.rc_str(rc), out[:100], err))
    return case


# ---------------------------------------------------------------------------
# callgrind


ANN_ROW = re.compile(r"^\s*((?:(?:[\d,]+|\.)\s+){6})(\S.*?)(?: \[(.*)\])?\s*$")


def annotate(case, path, label, inclusive):
    """callgrind_annotate's PROGRAM TOTALS and {function: [6 costs]} (rows of
    the same function in several files are added up), or None."""
    cmd = ["callgrind_annotate", "--threshold=100", "--auto=no",
           "--inclusive=%s" % ("yes" if inclusive else "no"), path]
    rc, out, err, _ = rt.run(cmd)
    what = "%s: callgrind_annotate%s" % (label, " --inclusive=yes" if inclusive else "")
    if not case.check("%s exits 0, no warnings" % what, rc == 0 and b"WARNING" not in err,
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    totals, funcs = None, {}
    for line in out.decode("utf-8", "replace").splitlines():
        # percentages are decoration: "1,234 (5.6%)"
        m = ANN_ROW.match(re.sub(r"\(\s*[\d.]+%\)", "", line))
        if not m:
            continue
        costs = [0 if c == "." else num(c) for c in m.group(1).split()]
        name = m.group(2)
        if name == "PROGRAM TOTALS":
            totals = costs
        elif ":" in name:
            fn = name.split(":", 1)[1]
            funcs[fn] = [a + b for a, b in zip(funcs.get(fn, [0] * 6), costs)]
    case.check("%s prints PROGRAM TOTALS and functions" % what, totals is not None and funcs,
               rt.tail(out, 400))
    return (totals, funcs) if totals is not None else None


def expected_costs(rep, inclusive):
    """{function: [6 costs]} from the report: self = the sites whose frames[0]
    is the function; inclusive = the sites whose stack holds it (once each).
    Unknown functions ("??") are named differently in the export: left out."""
    out = {}
    for s in rt.sites_of(rep):
        names = [f.get("function") for f in s.get("frames") or []]
        for fn in (set(names) if inclusive else names[:1]):
            if fn and fn != "??":
                out[fn] = [a + s.get(k, 0) for a, k in zip(out.get(fn, [0] * 6), SITE_KEYS)]
    return out


def check_callgrind_file(case, text, rep, label):
    """The header, and totals: (the sum of all self costs) against the report."""
    lines = text.splitlines()
    case.eq("%s: starts with the format marker" % label, "# callgrind format", lines[0] if lines else None)
    ev = [l for l in lines if l.startswith("events:")]
    case.eq("%s: events line" % label, ["events: " + " ".join(EVENTS)], ev)
    summ = rep["summary"]
    want = [summ[k] for k in SUMMARY_KEYS]
    for key in ("summary", "totals"):
        got = [l.split()[1:] for l in lines if l.startswith(key + ":")]
        case.eq("%s: %s: line == the report's summary" % (label, key), [want],
                [[int(v) for v in g] for g in got])


def compare_functions(case, label, expected, got, what):
    bad = []
    for fn, costs in sorted(expected.items()):
        if got.get(fn) != costs:
            bad.append("%s: expected %r, got %r" % (fn, costs, got.get(fn)))
    case.check("%s: %s costs of every function == the report's (%d functions)" % (
        label, what, len(expected)), expected and not bad, "; ".join(bad[:4]))


def case_callgrind(env, workroot):
    case = rt.Case("export-time-callgrind", workroot)
    trace, rep = run_traced(case, env, "phases")
    if trace:
        path = os.path.join(case.dir, "phases.callgrind")
        text = export(case, env, trace, "callgrind", path)
        if text is not None:
            check_callgrind_file(case, text, rep, "callgrind")
            ann = annotate(case, path, "callgrind", inclusive=False)
            if ann:
                totals, funcs = ann
                case.eq("callgrind: PROGRAM TOTALS == the report's summary",
                        [rep["summary"][k] for k in SUMMARY_KEYS], totals)
                case.eq("callgrind: self costs of phases.c's functions (known)",
                        {f: list(v) for f, v in PHASES_SELF.items()},
                        {f: funcs.get(f) for f in PHASES_SELF})
                compare_functions(case, "callgrind", expected_costs(rep, False), funcs, "self")
            ann = annotate(case, path, "callgrind", inclusive=True)
            if ann:
                totals, funcs = ann
                inc = expected_costs(rep, True)
                compare_functions(case, "callgrind", inc, funcs, "inclusive")
                # main's: phase_a, phase_b, small_sizes, init_cache_once, plus
                # pthread_create's internal allocations (compared above).
                known = 4 + 8 + 18 + 1
                case.eq("callgrind: main's inclusive allocations >= %d (phases.c)" % known,
                        (known, None), (funcs.get("main") or [None])[0])
                case.eq("callgrind: worker_main's inclusive allocations and bytes (phases.c)",
                        [110, 140960], (funcs.get("worker_main") or [None, None])[:2])
    # Recursion: main -> recurse(200) -> ... -> alloc_at_bottom: malloc(42);
    # recurse_deep(1000) -> ... -> alloc_deep: malloc(43), its stack cut at the
    # depth cap inside recurse_deep, so main does not hold it.
    rtrace, rrep = run_traced(case, env, "recursion")
    if rtrace:
        path = os.path.join(case.dir, "recursion.callgrind")
        if export(case, env, rtrace, "callgrind", path, label="recursion") is not None:
            ann = annotate(case, path, "recursion", inclusive=True)
            if ann:
                _, funcs = ann
                case.eq("recursion: inclusive (allocations, bytes) counted once per stack",
                        {"recurse": [1, 42], "recurse_deep": [1, 43], "main": [1, 42]},
                        {f: (funcs.get(f) or [None, None])[:2] for f in ("recurse", "recurse_deep", "main")})
                compare_functions(case, "recursion", expected_costs(rrep, True), funcs, "inclusive")
    return case


# ---------------------------------------------------------------------------
# chrome


def event_problems(e):
    """What the Trace Event Format requires of the events memviz writes."""
    if not isinstance(e, dict):
        return ["not an object"]
    probs = []
    for k, t in (("name", str), ("ph", str), ("pid", int), ("tid", int)):
        if not isinstance(e.get(k), t) or isinstance(e.get(k), bool):
            probs.append("%s %r" % (k, e.get(k)))
    ph = e.get("ph")
    if ph not in ("C", "M", "i"):
        return probs + ["unexpected ph %r" % ph]
    ts = e.get("ts")
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts < 0:
        probs.append("ts %r" % ts)
    args = e.get("args")
    if not isinstance(args, dict) or not args:
        probs.append("args %r" % args)
    elif ph == "C" and not all(isinstance(v, int) and v >= 0 for v in args.values()):
        probs.append("counter args %r" % args)
    elif ph == "M" and (e.get("name") not in ("process_name", "thread_name")
                        or not isinstance(args.get("name"), str)):
        probs.append("metadata %r" % e)
    if ph == "i" and e.get("s") not in ("g", "p", "t"):
        probs.append("instant scope %r" % e.get("s"))
    return probs


def load_chrome(case, text, label):
    """The parsed trace's events, after the strict checks, or None."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        case.check("%s: valid JSON" % label, False, str(e))
        return None
    ok = case.check("%s: a JSON object with traceEvents, displayTimeUnit ms" % label,
                    isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)
                    and doc.get("displayTimeUnit") == "ms", repr(doc)[:300])
    if not ok:
        return None
    events = doc["traceEvents"]
    bad = ["#%d %s" % (i, "; ".join(p)) for i, p in enumerate(map(event_problems, events)) if p]
    case.check("%s: every event has its phase's fields (%d events)" % (label, len(events)), not bad,
               "; ".join(bad[:5]))
    series = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "C":
            series.setdefault((e.get("pid"), e.get("name")), []).append(e)
    back = [k for k, v in series.items() if [e["ts"] for e in v] != sorted(e["ts"] for e in v)]
    case.check("%s: every counter's timestamps are non-decreasing" % label, not back, repr(back))
    return events


def counter(events, name):
    return [(e["ts"], e["args"].get("bytes")) for e in events
            if e.get("ph") == "C" and e.get("name") == name]


def value_at(points, ts):
    """A counter's value in effect at ts: its latest event at or before ts."""
    v = None
    for t, x in points:
        if t <= ts:
            v = x
    return v


def check_chrome_full(case, events, rep):
    summ, proc = rep["summary"], rep.get("process") or {}
    meta = [e for e in events if e["ph"] == "M"]
    case.eq("chrome: one process_name, for the traced pid", [proc.get("pid")],
            [e["pid"] for e in meta if e["name"] == "process_name"])
    case.check("chrome: the worker thread is named", any(
        e["name"] == "thread_name" and e["args"]["name"] == "worker" for e in meta), repr(meta))
    heap = counter(events, "heap")
    case.eq("chrome: a few hundred heap points", (200, 1000), len(heap))
    if not heap:
        return
    case.eq("chrome: the heap counter's maximum == report peak_bytes", summ["peak_bytes"],
            max(v for _, v in heap))
    case.eq("chrome: heap at the start and at the end (what leaked)",
            [(0, 0), (summ["duration_ns"] // 1000, summ["leaked_bytes"])], [heap[0], heap[-1]])
    tp = summ["peak_time_ns"] // 1000
    # phases.c: 1 MiB before phase_b, 2 MiB for 400 ms after it, 1 MiB for 400
    # ms after free_a (>= 400 ms after the peak)
    case.eq("chrome: heap at peak/2, peak+200 ms, peak+600 ms",
            [MIB, 2 * MIB, MIB], [value_at(heap, t) for t in (tp // 2, tp + 200000, tp + 600000)])
    peaks = [e for e in events if e["ph"] == "i"]
    case.eq("chrome: one instant event at the peak (ts, bytes)",
            [("heap peak", tp, summ["peak_bytes"])],
            [(e["name"], e["ts"], e["args"].get("bytes")) for e in peaks])
    rss = counter(events, "rss")
    case.check("chrome: an rss counter, every value in (0, peak_rss_bytes]",
               rss and all(0 < v <= summ["peak_rss_bytes"] for _, v in rss),
               "%d points, peak_rss_bytes %d, max %r" % (len(rss), summ["peak_rss_bytes"],
                                                          max((v for _, v in rss), default=None)))


def case_chrome(env, workroot):
    case = rt.Case("export-time-chrome", workroot)
    trace, rep = run_traced(case, env, "phases")
    if not trace:
        return case
    text = export(case, env, trace, "chrome", os.path.join(case.dir, "phases.json"))
    events = load_chrome(case, text, "chrome") if text is not None else None
    if events is not None:
        check_chrome_full(case, events, rep)
    # A window that ends after the run is cut at its end.
    text = export(case, env, trace, "chrome", os.path.join(case.dir, "late.json"),
                  ["--to", "1000"], "chrome-to-1000s")
    events = load_chrome(case, text, "chrome-to-1000s") if text is not None else None
    if events is not None:
        heap = counter(events, "heap")
        case.eq("chrome-to-1000s: the last heap point is the end of the run",
                rep["summary"]["duration_ns"] // 1000, heap[-1][0] if heap else None)
    # A window after free_a: 1 MiB all along, every point inside it.
    tp = rep["summary"]["peak_time_ns"]
    lo, hi = tp + 600000000, tp + 780000000
    text = export(case, env, trace, "chrome", os.path.join(case.dir, "window.json"),
                  window_args(lo, hi), "chrome-window")
    events = load_chrome(case, text, "chrome-window") if text is not None else None
    if events is not None:
        heap = counter(events, "heap")
        case.check("chrome-window: heap points lie in the window, hold 1 MiB",
                   heap and all(us(lo) <= t <= us(hi) and v == MIB for t, v in heap),
                   "window %d..%d us: %r" % (us(lo), us(hi), heap[:5]))
    return case


CASES = [
    ("export-time-massif", case_massif),
    ("export-time-callgrind", case_callgrind),
    ("export-time-chrome", case_chrome),
]
