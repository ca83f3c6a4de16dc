"""Integration cases for the stack-based exports of `memviz export`:
collapsed (folded stacks), pprof (gzipped profile.proto) and speedscope's
JSON format.

Each case runs tests/programs/phases under `memviz run` (its allocations per
function are known, see the top of phases.c), exports the trace and feeds the
export to the real tool that reads that format:

  export-collapsed    flamegraph.pl (Debian's libdevel-nytprof-perl ships it)
                      draws the SVG; the per-function totals in its frame
                      titles are checked, and a strict parser checks every
                      line of the folded file against the report.
  export-pprof        `go tool pprof` (Debian's golang-go): -raw (every sample,
                      location, line and mapping) and -top for each sample
                      type, then a --from/--to window.
  export-speedscope   validated against the file-format schema that the npm
                      package speedscope ships (tests/consumers, installed by
                      scripts/install-deps.sh) with python3-jsonschema; the
                      samples are then checked against the report.
  export-stacks-usage unknown format or cost, pprof to a terminal.

The expected numbers come from `memviz report --json` of the same trace, and
a few from phases.c directly (phase_a: 1,048,576 bytes at the peak,
worker_leak: 40,960 bytes leaked, ...), so a report and an export that agree
on a wrong number still fail. tests/programs/cxx is exported too, for C++
names (spaces, templates, commas) and functions without symbols.

    python3 tests/integration/run_tests.py ... -k export-collapsed (or
    export-pprof, export-speedscope, export-stacks-usage)
"""

import calendar
import collections
import gzip
import html
import json
import os
import pty
import re
import subprocess
import time

import run_tests as rt

FLAMEGRAPH = "/usr/share/perl5/Devel/NYTProf/flamegraph.pl"
SPEEDSCOPE_SCHEMA = os.path.join(rt.REPO, "tests", "consumers", "node_modules", "speedscope", "dist",
                                 "release", "file-format-schema.json")
HINT = "run scripts/install-deps.sh"

COSTS = ("peak", "leaked", "allocations", "bytes", "temporary")
# A cost's per-site field in the report, and its total in the summary.
SITE_FIELD = {"peak": "at_peak_bytes", "leaked": "leaked_bytes", "allocations": "allocations",
              "bytes": "allocated_bytes", "temporary": "temporary"}
SUMMARY_FIELD = {"peak": "peak_bytes", "leaked": "leaked_bytes", "allocations": "allocations",
                 "bytes": "allocated_bytes", "temporary": "temporary"}
BYTE_COSTS = ("peak", "leaked", "bytes")

# From phases.c: (function at frames[0], cost) -> value.
PHASES_KNOWN = {
    ("phase_a", "peak"): 4 * 262144,
    ("phase_b", "peak"): 8 * 131072,
    ("phase_b", "allocations"): 8,
    ("worker_leak", "leaked"): 10 * 4096,
    ("worker_churn", "temporary"): 100,
    ("worker_churn", "bytes"): 100 * 1000,
    ("small_sizes", "bytes"): 10 * 24 + 5 * 100 + 3 * 5000,
    ("init_cache_once", "leaked"): 777,
}


def known_for(cost):
    return {f: v for (f, c), v in PHASES_KNOWN.items() if c == cost}


def run_phases(case, env):
    """Traces phases and returns (trace, report) or (None, None)."""
    trace = rt.memviz_run(case, env, "phases")
    if not trace:
        return None, None
    rep = rt.report_json(case, env, trace, "phases")
    return (trace, rep) if rep is not None else (None, None)


VECTOR_PUSH_BACK = "std::vector<int, std::allocator<int> >::push_back(int const&)"


def unknown_names(rep):
    """The names the exports give the report's unknown functions (libstdc++
    has no symbols unless its debug package is installed)."""
    return {frame_name(f) for s in rt.sites_of(rep) for f in s.get("frames") or []
            if f.get("function") == "??" and f.get("module")}


def run_cxx(case, env):
    """cxx has C++ names (spaces, '::', templates, commas) and a frame in
    libstdc++ that has no symbols ('??'): the names the formats must carry."""
    trace = rt.memviz_run(case, env, "cxx", stdout=b"cxx: done\n")
    if not trace:
        return None, None
    rep = rt.report_json(case, env, trace, "cxx")
    return (trace, rep) if rep is not None else (None, None)


def export(case, env, trace, fmt, args=(), label=None):
    """`memviz export --format FMT ARGS TRACE` to stdout; returns the bytes or None."""
    label = label or " ".join(["--format", fmt] + list(args))
    rc, out, err, _ = rt.run([env.memviz, "export", "--format", fmt] + list(args) + [trace],
                             timeout=rt.REPORT_TIMEOUT)
    ok = case.check("export %s exits 0, silent" % label, rc == 0 and not err,
                    "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err)))
    return out if ok else None


def check_asan_identical(case, env, trace, fmt, args, out):
    """The ASan/UBSan build writes the same bytes and says nothing."""
    if not env.asan or out is None:
        return
    rc, aout, aerr, _ = rt.run([env.asan, "export", "--format", fmt] + list(args) + [trace],
                               timeout=rt.REPORT_TIMEOUT)
    complaint = rt.sanitizer_complaint(aerr)
    case.check("asan export --format %s: exit 0, clean, identical output" % fmt,
               rc == 0 and not complaint and aout == out,
               "%s%s, output %s; stderr: %s" % (rt.rc_str(rc), ", " + complaint if complaint else "",
                                                "identical" if aout == out else "differs",
                                                rt.tail(aerr, 1500)))


def check_known(case, what, got, cost):
    """got: {function: value} from a consumer; phases.c's numbers must be there."""
    for func, value in sorted(known_for(cost).items()):
        case.eq("%s: %s (from phases.c)" % (what, func), value, got.get(func))


# ---------------------------------------------------------------------------
# Expectations from the report


def frame_name(frame):
    """A frame's name in the exports: its function, or for an unknown one
    "?? [module]" (the module's file name), as the text report shows it."""
    name = frame.get("function")
    if name == "??" and frame.get("module"):
        return "?? [%s]" % os.path.basename(frame["module"])
    return name


def site_names(site):
    return [frame_name(f) for f in site.get("frames") or []]


def expected_flat(rep, field):
    """{function: sum of field over the sites whose innermost frame it is}"""
    out = collections.Counter()
    for s in rt.sites_of(rep):
        if s.get(field) and site_names(s):
            out[site_names(s)[0]] += s[field]
    return dict(out)


def expected_cum(rep, field):
    """{function: sum of field over the sites it appears in}: pprof's cum."""
    out = collections.Counter()
    for s in rt.sites_of(rep):
        for name in set(site_names(s)) if s.get(field) else ():
            out[name] += s[field]
    return dict(out)


def expected_boxes(rep, field):
    """{function: summed values of its flame graph boxes}: a box per distinct
    path from the root, so a site counts once per occurrence of the function.
    flamegraph.pl shows '<' and '>' as '(' and ')' (its `tr/<>/()/`)."""
    out = collections.Counter()
    for s in rt.sites_of(rep):
        for name in site_names(s) if s.get(field) else ():
            out[fold_name(name).translate(str.maketrans("<>", "()"))] += s[field]
    return dict(out)


def total(rep, cost):
    return (rep.get("summary") or {}).get(SUMMARY_FIELD[cost])


# ---------------------------------------------------------------------------
# collapsed


FOLDED_LINE = re.compile(r"([^\n]+) ([0-9]+)")


def fold_name(name):
    """What the format does to a name: no ';' (the separator), no control bytes."""
    name = name or "??"
    return "".join(":" if c == ";" else " " if ord(c) < 0x20 or c == "\x7f" else c for c in name)


def expected_folded(rep, field):
    out = collections.Counter()
    for s in rt.sites_of(rep):
        if s.get(field):
            out[";".join(fold_name(n) for n in reversed(site_names(s)))] += s[field]
    return dict(out)


def parse_folded(case, label, data):
    """A strict reader of folded stacks: returns {stack: value} or None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        case.check("%s: UTF-8" % label, False, str(e))
        return None
    probs, lines = [], {}
    if text and not text.endswith("\n"):
        probs.append("last line not terminated")
    for i, line in enumerate(text.splitlines()):
        m = FOLDED_LINE.fullmatch(line)
        if not m:
            probs.append("line %d malformed: %r" % (i + 1, line[:200]))
            continue
        stack, value = m.group(1), int(m.group(2))
        if any(not f for f in stack.split(";")):
            probs.append("line %d has an empty frame: %r" % (i + 1, line[:200]))
        if value == 0:
            probs.append("line %d has value 0" % (i + 1))
        if stack in lines:
            probs.append("line %d repeats a stack (not merged): %r" % (i + 1, stack[:200]))
        lines[stack] = lines.get(stack, 0) + value
    case.check("%s: every line is 'frame;...;frame VALUE', one per stack, VALUE > 0" % label,
               not probs, "; ".join(probs[:5]))
    return lines if not probs else None


def flamegraph_titles(case, label, folded_path, countname):
    """Runs flamegraph.pl; returns {function: summed box values} including 'all'."""
    svg = folded_path + ".svg"
    with open(svg, "wb") as f:
        p = subprocess.run(["perl", FLAMEGRAPH, "--minwidth", "0", "--countname", countname,
                            folded_path], stdout=f, stderr=subprocess.PIPE, timeout=rt.RUN_TIMEOUT)
    if not case.check("%s: flamegraph.pl exits 0" % label, p.returncode == 0,
                      "exit %d; stderr: %s" % (p.returncode, rt.tail(p.stderr))):
        return None
    text = open(svg, encoding="utf-8", errors="replace").read()
    boxes = collections.Counter()
    for m in re.finditer(r"<title>(.*?) \(([0-9,]+) %s, [0-9.]+%%\)</title>" % re.escape(countname),
                         text):
        boxes[html.unescape(m.group(1))] += int(m.group(2).replace(",", ""))
    case.check("%s: flamegraph.pl drew boxes" % label, boxes, "svg: %s" % rt.tail(text, 300))
    return dict(boxes)


def collapsed_cost(case, env, trace, rep, cost):
    label = "collapsed --cost %s" % cost
    out = export(case, env, trace, "collapsed", ["--cost", cost])
    if out is None:
        return
    lines = parse_folded(case, label, out)
    if lines is None:
        return
    field = SITE_FIELD[cost]
    case.eq("%s: lines == the report's sites folded by function name (merged)" % label,
            expected_folded(rep, field), lines)
    case.eq("%s: sum of the lines == summary.%s" % (label, SUMMARY_FIELD[cost]), total(rep, cost),
            sum(lines.values()))
    path = os.path.join(case.dir, "phases.%s.folded" % cost)
    with open(path, "wb") as f:
        f.write(out)
    boxes = flamegraph_titles(case, label, path, "bytes" if cost in BYTE_COSTS else "calls")
    if boxes is None:
        return
    case.eq("%s: flamegraph.pl's 'all' == summary.%s" % (label, SUMMARY_FIELD[cost]),
            total(rep, cost), boxes.pop("all", None))
    case.eq("%s: flamegraph.pl's boxes per function == the report's sites" % label,
            expected_boxes(rep, field), boxes)
    leaves = {}
    for stack, value in lines.items():
        leaf = stack.split(";")[-1]
        leaves[leaf] = leaves.get(leaf, 0) + value
    check_known(case, label, leaves, cost)


def case_export_collapsed(env, workroot):
    case = rt.Case("export-collapsed", workroot)
    if not case.check("flamegraph.pl is installed", os.path.isfile(FLAMEGRAPH), HINT):
        return case
    trace, rep = run_phases(case, env)
    if not trace:
        return case
    for cost in COSTS:
        collapsed_cost(case, env, trace, rep, cost)
    # the default cost is peak; -o FILE writes what stdout gets
    default = export(case, env, trace, "collapsed", [], label="--format collapsed (default cost)")
    path = os.path.join(case.dir, "phases.o.folded")
    rc, _, err, _ = rt.run([env.memviz, "export", "--format", "collapsed", "--cost", "peak", "-o",
                            path, trace])
    peak = export(case, env, trace, "collapsed", ["--cost", "peak"])
    case.check("collapsed: the default cost is peak", default is not None and default == peak,
               "outputs differ")
    case.check("collapsed -o FILE: exit 0, FILE == stdout",
               rc == 0 and os.path.isfile(path) and open(path, "rb").read() == peak,
               "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err)))
    check_asan_identical(case, env, trace, "collapsed", ["--cost", "leaked"],
                         export(case, env, trace, "collapsed", ["--cost", "leaked"]))
    collapsed_cxx(case, env)
    return case


def collapsed_cxx(case, env):
    trace, rep = run_cxx(case, env)
    if not trace:
        return
    out = export(case, env, trace, "collapsed", ["--cost", "bytes"], label="collapsed --cost bytes (cxx)")
    lines = parse_folded(case, "cxx collapsed", out) if out is not None else None
    if lines is None:
        return
    case.eq("cxx collapsed: lines == the report's sites folded by function name",
            expected_folded(rep, "allocated_bytes"), lines)
    frames = {f for k in lines for f in k.split(";")}
    case.check("cxx collapsed: C++ names and unknown functions ('?? [module]') come through",
               VECTOR_PUSH_BACK in frames and unknown_names(rep) <= frames,
               "unknown in the report: %r; frames: %r" % (sorted(unknown_names(rep)), sorted(frames)[:5]))
    path = os.path.join(case.dir, "cxx.folded")
    with open(path, "wb") as f:
        f.write(out)
    boxes = flamegraph_titles(case, "cxx collapsed", path, "bytes")
    if boxes is not None:
        case.eq("cxx collapsed: flamegraph.pl's 'all' == summary.allocated_bytes", total(rep, "bytes"),
                boxes.pop("all", None))
        case.eq("cxx collapsed: flamegraph.pl's boxes per function == the report's sites",
                expected_boxes(rep, "allocated_bytes"), boxes)


# ---------------------------------------------------------------------------
# pprof


SAMPLE_TYPES = ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")
# pprof sample type -> report site field (inuse_objects: not in the report)
PPROF_FIELD = {"alloc_objects": "allocations", "alloc_space": "allocated_bytes",
               "inuse_space": "at_peak_bytes"}
PPROF_SUMMARY = {"alloc_objects": "allocations", "alloc_space": "allocated_bytes",
                 "inuse_space": "peak_bytes"}


def go_env(case):
    """go tool pprof with its caches in the case directory and no way out:
    a local file is never symbolized remotely, and the proxies go nowhere."""
    home = os.path.join(case.dir, "gohome")
    for d in ("cache", "gopath", "pprof", "binaries"):
        os.makedirs(os.path.join(home, d), exist_ok=True)
    env = dict(os.environ)
    env.update(HOME=home, GOCACHE=os.path.join(home, "cache"), GOPATH=os.path.join(home, "gopath"),
               GOFLAGS="", GOPROXY="off", GOTOOLCHAIN="local", GOTELEMETRY="off",
               PPROF_TMPDIR=os.path.join(home, "pprof"),
               PPROF_BINARY_PATH=os.path.join(home, "binaries"), TZ="UTC",
               http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", no_proxy="",
               NO_PROXY="")
    return env


def pprof(case, what, args, genv):
    rc, out, err, _ = rt.run(["go", "tool", "pprof"] + args, env=genv)
    ok = case.check("go tool pprof %s: exits 0, no warnings" % what, rc == 0 and not err.strip(),
                    "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err)))
    return out.decode("utf-8", "replace") if ok else None


def parse_raw(case, text):
    """`pprof -raw` -> dict(header lines, samples [(values, [loc ids])],
    locations {id: (address, mapping, [(function, file, line)])},
    mappings {id: (start, limit, file, build id, flags)}) or None."""
    lines = text.splitlines()
    res = {"header": {}, "samples": [], "locations": {}, "mappings": {}, "types": None}
    section, loc, probs = "header", None, []
    for line in lines:
        if line in ("Samples:", "Locations", "Mappings"):
            section = line.rstrip(":")
            continue
        if section == "header":
            k, _, v = line.partition(": ")
            res["header"].setdefault(k, []).append(v)
        elif section == "Samples" and res["types"] is None:
            res["types"] = line.split()
        elif section == "Samples":
            m = re.fullmatch(r"\s*((?:\d+\s+)*\d+): ([\d ]*)", line)
            if m:
                res["samples"].append(([int(v) for v in m.group(1).split()],
                                       [int(x) for x in m.group(2).split()]))
            else:
                probs.append("sample line %r" % line)
        elif section == "Locations":
            # pprof leaves out M= for a location in no mapping (a pseudo-frame)
            m = re.fullmatch(r"\s*(\d+): 0x([0-9a-f]+)(?: M=(\d+))? (.*) s=\d+\(?\)?", line)
            m2 = re.fullmatch(r"\s+(.*) s=\d+\(?\)?", line)
            if m:
                loc = int(m.group(1))
                res["locations"][loc] = (int(m.group(2), 16), int(m.group(3) or 0), [])
                text_line = m.group(4)
            elif m2 and loc is not None:
                text_line = m2.group(1)
            else:
                probs.append("location line %r" % line)
                continue
            name, _, fl = text_line.rpartition(" ")
            file, _, ln = fl.rpartition(":")
            res["locations"][loc][2].append((name, file, int(ln) if ln.isdigit() else None))
        elif section == "Mappings":
            m = re.fullmatch(r"(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S+) ?([0-9a-f]*) ?(.*)",
                             line)
            if m:
                res["mappings"][int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16), m.group(5),
                                                    m.group(6), m.group(7))
            elif line.strip():
                probs.append("mapping line %r" % line)
    case.check("pprof -raw: output parses", not probs and res["samples"], "; ".join(probs[:5]))
    return res if not probs else None


def elf_build_id(path):
    """The GNU build-id of an ELF file, as readelf prints it."""
    p = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout.decode("utf-8", "replace"))
    return m.group(1) if m else None


def site_key(site):
    """A site's frames as pprof shows them: (function, file, line, return address)."""
    return tuple((frame_name(f), f.get("file") or "", f.get("line") or 0,
                  int(f.get("address", "0"), 16)) for f in site.get("frames") or [])


def raw_sample_key(raw, loc_ids):
    frames = []
    for lid in loc_ids:
        addr, _, lines = raw["locations"].get(lid, (0, 0, [("?", "", -1)]))
        for name, file, line in lines:
            frames.append((name, file, line or 0, addr + 1))  # pprof holds the call's address
    return tuple(frames)


def check_raw_samples(case, label, raw, rep):
    """One sample per site: same frames (function, file:line, address) and
    values alloc_objects, alloc_space, inuse_space."""
    want = collections.Counter()
    for s in rt.sites_of(rep):
        if s.get("allocations") or s.get("at_peak_bytes"):
            want[(site_key(s), s.get("allocations"), s.get("allocated_bytes"), s.get("at_peak_bytes"))] += 1
    got = collections.Counter()
    for values, loc_ids in raw["samples"]:
        got[(raw_sample_key(raw, loc_ids), values[0], values[1], values[3])] += 1
    case.check("%s: one sample per site, frames and alloc_objects, alloc_space, inuse_space "
               "== the report's" % label, got == want,
               "only in the report: %r; only in pprof: %r" % (list((want - got).items())[:3],
                                                             list((got - want).items())[:3]))


LEAK_KINDS = ("reachable", "possible", "indirect", "definite")


def check_raw_leaks(case, raw, rep):
    """The trace has a leak scan at exit: its four kinds are eight sample
    types, bytes then objects, and they sum to the report's "leaks"."""
    got = {k: {"bytes": sum(v[4 + i] for v, _ in raw["samples"]),
               "blocks": sum(v[8 + i] for v, _ in raw["samples"])} for i, k in enumerate(LEAK_KINDS)}
    want = {k: (rep.get("leaks") or {}).get(k) for k in LEAK_KINDS}
    case.eq("pprof -raw: the leak kinds' samples sum to the report's leaks", want, got)
    summ = rep.get("summary") or {}
    case.eq("pprof -raw: the four kinds cover every block not freed at exit",
            [summ.get("leaked_bytes"), summ.get("leaked_blocks")],
            [sum(g["bytes"] for g in got.values()), sum(g["blocks"] for g in got.values())])


def check_raw(case, env, raw, rep):
    types = raw["types"] or []
    case.eq("pprof -raw: sample types (inuse_space the default), then the exit snapshot's leak kinds",
            ["alloc_objects/count", "alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes[dflt]"]
            + ["%s_space/bytes" % k for k in LEAK_KINDS] + ["%s_objects/count" % k for k in LEAK_KINDS],
            types)
    if len(types) == 12:
        check_raw_leaks(case, raw, rep)
    case.eq("pprof -raw: PeriodType", ["space bytes"], raw["header"].get("PeriodType"))
    check_raw_samples(case, "pprof -raw", raw, rep)
    # inuse_objects: blocks live at the peak, i.e. phase_a's 4 and phase_b's 8 (phases.c)
    inuse_objects = collections.Counter()
    for values, loc_ids in raw["samples"]:
        leaf = raw["locations"].get(loc_ids[0], (0, 0, [("?",)]))[2][0][0] if loc_ids else "?"
        inuse_objects[leaf] += values[2]
    case.eq("pprof -raw: inuse_objects per function (phases.c)", {"phase_a": 4, "phase_b": 8},
            {k: v for k, v in inuse_objects.items() if v})
    check_mappings(case, env, raw)


def pprof_cxx(case, env, genv):
    trace, rep = run_cxx(case, env)
    if not trace:
        return
    path = os.path.join(case.dir, "cxx.pb.gz")
    rc, _, err, _ = rt.run([env.memviz, "export", "--format", "pprof", "-o", path, trace])
    if case.check("cxx: export --format pprof exits 0", rc == 0, rt.tail(err)):
        text = pprof(case, "-raw (cxx)", ["-raw", path], genv)
        raw = parse_raw(case, text) if text is not None else None
        if raw is not None:
            check_raw_samples(case, "cxx pprof -raw", raw, rep)


def check_mappings(case, env, raw):
    maps = raw["mappings"]
    bad = []
    for lid, (addr, mid, lines) in raw["locations"].items():
        if mid not in maps:
            bad.append("location %d: mapping %d not listed" % (lid, mid))
        elif not maps[mid][0] <= addr < maps[mid][1]:
            bad.append("location %d: 0x%x outside mapping %d" % (lid, addr, mid))
        if not lines:
            bad.append("location %d has no line" % lid)
    case.check("pprof -raw: every location has lines and lies in its mapping", not bad, "; ".join(bad[:5]))
    prog = os.path.realpath(env.prog("phases"))
    mine = [m for m in maps.values() if os.path.realpath(m[2]) == prog]
    case.check("pprof -raw: phases is one mapping", len(mine) == 1,
               "mappings: %r" % [m[2] for m in maps.values()])
    if mine:
        case.eq("pprof -raw: phases' build id", elf_build_id(prog), mine[0][3])
        case.eq("pprof -raw: phases' mapping is symbolized (functions, files, lines, inline frames)",
                "[FN][FL][LN][IN]", mine[0][4])


def parse_top(case, what, text):
    """`pprof -top` -> (total, {function: (flat, cum)}) or None."""
    m = re.search(r"Showing nodes accounting for (\d+)B?, 100% of (\d+)B? total", text)
    if not case.check("pprof %s: header shows every node" % what, m, rt.tail(text, 400)):
        return None
    rows, probs = {}, []
    body = text[m.end():].splitlines()[2:]  # the column titles follow the header
    for line in body:
        r = re.fullmatch(r"\s*(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+(\d+)B?\s+[\d.]+%\s+(.+)", line)
        if not r:
            probs.append(line)
            continue
        name = r.group(3)
        if name.endswith(" (inline)"):
            name = name[: -len(" (inline)")]
        flat, cum = rows.get(name, (0, 0))
        rows[name] = (flat + int(r.group(1)), cum + int(r.group(2)))
    case.check("pprof %s: every row parses" % what, not probs, repr(probs[:3]))
    return int(m.group(2)), rows


def check_top(case, genv, path, rep, index):
    unit = ["-unit=B"] if index.endswith("_space") else []
    what = "-top -sample_index=%s" % index
    text = pprof(case, what, ["-top", "-sample_index=" + index, "-nodecount=1000000", "-nodefraction=0",
                              "-edgefraction=0"] + unit + [path], genv)
    parsed = parse_top(case, what, text) if text is not None else None
    if parsed is None:
        return
    tot, rows = parsed
    if index == "inuse_objects":  # not in the report: phases.c's 4 + 8 blocks
        case.eq("pprof %s: total (phases.c)" % what, 12, tot)
        return
    field = PPROF_FIELD[index]
    case.eq("pprof %s: total == summary.%s" % (what, PPROF_SUMMARY[index]),
            (rep.get("summary") or {}).get(PPROF_SUMMARY[index]), tot)
    case.eq("pprof %s: flat per function == the report's sites" % what, expected_flat(rep, field),
            {k: v[0] for k, v in rows.items() if v[0]})
    case.eq("pprof %s: cum per function == the report's sites" % what, expected_cum(rep, field),
            {k: v[1] for k, v in rows.items() if v[1]})
    cost = {"alloc_objects": "allocations", "alloc_space": "bytes", "inuse_space": "peak"}[index]
    check_known(case, "pprof " + what, {k: v[0] for k, v in rows.items()}, cost)


def raw_time(raw):
    """pprof -raw's Time (UTC, ns precision) -> ns since the epoch."""
    t = (raw["header"].get("Time") or [""])[0]
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d+))? \+0000 UTC", t)
    if not m:
        return None
    secs = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
    return secs * 10**9 + int((m.group(2) or "0").ljust(9, "0"))


def pprof_window(case, env, trace, genv, full_time):
    """--from 0.2 --to 0.7: only phase_b's 8 x 131,072 bytes are allocated in
    it (phase_a runs at ~0, free_a after 0.8 s; phases.c sleeps 400 ms between)."""
    path = os.path.join(case.dir, "window.pb.gz")
    rc, _, err, _ = rt.run([env.memviz, "export", "--format", "pprof", "--from", "0.2", "--to", "0.7",
                            "-o", path, trace])
    if not case.check("export pprof --from 0.2 --to 0.7 exits 0", rc == 0,
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return
    for index, want in (("alloc_space", 8 * 131072), ("alloc_objects", 8)):
        unit = ["-unit=B"] if index.endswith("_space") else []
        what = "window -top -sample_index=%s" % index
        text = pprof(case, what, ["-top", "-sample_index=" + index, "-nodecount=1000000",
                                  "-nodefraction=0", "-edgefraction=0"] + unit + [path], genv)
        parsed = parse_top(case, what, text) if text is not None else None
        if parsed:
            case.eq("pprof %s: phase_b is all there is (phases.c)" % what, {"phase_b": want},
                    {k: v[0] for k, v in parsed[1].items() if v[0]})
            if index == "alloc_space":
                case.check("pprof %s: duration is the window's 500ms" % what,
                           "Duration: 500ms," in text, rt.tail(text, 300))
    text = pprof(case, "window -raw", ["-raw", path], genv)
    raw = parse_raw(case, text) if text is not None else None
    if raw is not None and full_time is not None:
        case.eq("pprof window -raw: Time is the trace's start + 0.2 s", full_time + 200 * 10**6, raw_time(raw))


def case_export_pprof(env, workroot):
    case = rt.Case("export-pprof", workroot)
    if not case.check("go is installed", subprocess.run(["sh", "-c", "command -v go"],
                                                        stdout=subprocess.DEVNULL).returncode == 0, HINT):
        return case
    trace, rep = run_phases(case, env)
    if not trace:
        return case
    genv = go_env(case)
    path = os.path.join(case.dir, "phases.pb.gz")
    rc, _, err, _ = rt.run([env.memviz, "export", "--format", "pprof", "-o", path, trace])
    if not case.check("export --format pprof -o FILE exits 0, silent", rc == 0 and not err,
                      "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return case
    data = open(path, "rb").read()
    case.check("pprof: the file is gzip", data[:2] == b"\x1f\x8b", repr(data[:4]))
    piped = export(case, env, trace, "pprof", [], label="--format pprof (to a pipe)")
    case.check("pprof: stdout (a pipe) gets the same bytes as -o FILE", piped == data,
               "%s vs %d bytes" % (len(piped) if piped is not None else None, len(data)))
    try:
        gzip.decompress(data)
        gz_ok, gz_err = True, ""
    except (OSError, EOFError) as e:
        gz_ok, gz_err = False, str(e)
    case.check("pprof: gzip stream is complete", gz_ok, gz_err)
    check_asan_identical(case, env, trace, "pprof", [], piped)

    text = pprof(case, "-raw", ["-raw", path], genv)
    raw = parse_raw(case, text) if text is not None else None
    full_time = None
    if raw is not None:
        check_raw(case, env, raw, rep)
        case.eq("pprof -raw: the comment names the trace", ["memviz trace %s" % trace],
                raw["header"].get("Comment"))
        full_time = raw_time(raw)
        mtime = int(os.path.getmtime(trace) * 10**9)
        dur = (rep.get("summary") or {}).get("duration_ns") or 0
        case.eq("pprof -raw: Time is when phases started (trace written at its end)",
                (mtime - dur - 60 * 10**9, mtime + 10**9), full_time)
    for index in SAMPLE_TYPES:
        check_top(case, genv, path, rep, index)
    text = pprof(case, "-top (default sample type)", ["-top", "-unit=B", path], genv)
    if text is not None:
        case.check("pprof: the default sample type is inuse_space", "Type: inuse_space" in text,
                   rt.tail(text, 300))
        dur = (rep.get("summary") or {}).get("duration_ns") or 0
        m = re.search(r"Duration: ([\d.]+)s,", text)
        case.eq("pprof -top: Duration == summary.duration_ns (to 10 ms)", (dur / 1e9 - 0.01, dur / 1e9 + 0.01),
                float(m.group(1)) if m else None)
    pprof_window(case, env, trace, genv, full_time)
    pprof_cxx(case, env, genv)
    return case


# ---------------------------------------------------------------------------
# speedscope


def speedscope_samples(case, label, doc, prof):
    """{(frames outermost first as (name, file, line))...: summed weight} or None."""
    frames = doc["shared"]["frames"]
    samples, weights = prof.get("samples"), prof.get("weights")
    probs = []
    if len(samples) != len(weights):
        probs.append("%d samples, %d weights" % (len(samples), len(weights)))
    if any(not isinstance(w, int) or w <= 0 for w in weights):
        probs.append("weights not all positive integers")
    if prof.get("endValue", 0) - prof.get("startValue", 0) != sum(weights):
        probs.append("endValue - startValue %r != sum of weights %d" % (
            prof.get("endValue", 0) - prof.get("startValue", 0), sum(weights)))
    out = collections.Counter()
    for stack, w in zip(samples, weights):
        if not stack or any(not isinstance(i, int) or not 0 <= i < len(frames) for i in stack):
            probs.append("bad frame indexes %r" % stack[:10])
            continue
        out[tuple((frames[i]["name"], frames[i].get("file"), frames[i].get("line")) for i in stack)] += w
    case.check("%s: samples, weights, endValue consistent" % label, not probs, "; ".join(probs[:5]))
    return dict(out) if not probs else None


def expected_speedscope(rep, field):
    out = collections.Counter()
    for s in rt.sites_of(rep):
        if s.get(field):
            out[tuple((frame_name(f), f.get("file") or None, f.get("line") or None)
                      for f in reversed(s.get("frames") or []))] += s[field]
    return dict(out)


def speedscope_export(case, env, trace, rep, validator, cost, phases=True):
    label = "speedscope --cost %s" % cost
    out = export(case, env, trace, "speedscope", ["--cost", cost])
    if out is None:
        return None
    try:
        doc = json.loads(out.decode("utf-8"))
    except ValueError as e:
        case.check("%s: valid JSON" % label, False, str(e))
        return None
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    if not case.check("%s: valid against speedscope's file-format-schema.json" % label, not errors,
                      "; ".join("%s: %s" % (list(e.path), e.message[:200]) for e in errors[:3])):
        return None
    profiles = doc["profiles"]
    active = profiles[doc.get("activeProfileIndex", 0)] if profiles else {}
    case.check("%s: the active profile is %s" % (label, cost),
               str(active.get("name", "")).startswith(cost + ":"), "name %r" % active.get("name"))
    nonzero = {c for c in COSTS if total(rep, c)} | {cost}
    names = [str(p.get("name", "")).split(":")[0] for p in profiles]
    case.eq("%s: one profile per cost with a non-zero total" % label, sorted(nonzero), sorted(names))
    for prof in profiles:
        c = str(prof.get("name", "")).split(":")[0]
        if c not in SITE_FIELD:
            continue
        what = "%s: profile %s" % (label, c)
        case.eq("%s: type and unit" % what, ["sampled", "bytes" if c in BYTE_COSTS else "none"],
                [prof.get("type"), prof.get("unit")])
        got = speedscope_samples(case, what, doc, prof)
        if got is None:
            continue
        case.eq("%s: weights per stack (function, file, line) == the report's sites" % what,
                expected_speedscope(rep, SITE_FIELD[c]), got)
        case.eq("%s: total == summary.%s" % (what, SUMMARY_FIELD[c]), total(rep, c), sum(got.values()))
        leaves = collections.Counter()
        for stack, w in got.items():
            leaves[stack[-1][0]] += w
        if phases:
            check_known(case, what, leaves, c)
    return out


def case_export_speedscope(env, workroot):
    case = rt.Case("export-speedscope", workroot)
    try:
        import jsonschema
    except ImportError:
        case.check("python3-jsonschema is installed", False, HINT)
        return case
    if not case.check("speedscope's schema is installed (npm package speedscope)",
                      os.path.isfile(SPEEDSCOPE_SCHEMA), "%s missing: %s" % (SPEEDSCOPE_SCHEMA, HINT)):
        return case
    schema = json.load(open(SPEEDSCOPE_SCHEMA))
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    trace, rep = run_phases(case, env)
    if not trace:
        return case
    outs = {}
    for cost in ("peak", "leaked", "temporary"):
        outs[cost] = speedscope_export(case, env, trace, rep, validator, cost)
    default = export(case, env, trace, "speedscope", [], label="--format speedscope (default cost)")
    case.check("speedscope: the default cost is peak", default is not None and default == outs["peak"],
               "outputs differ")
    check_asan_identical(case, env, trace, "speedscope", ["--cost", "leaked"], outs["leaked"])
    # the schema check must be able to fail: a file without its $schema does
    bad = json.loads(outs["peak"]) if outs["peak"] else {}
    bad.pop("$schema", None)
    case.check("speedscope: the schema rejects a file without $schema", not validator.is_valid(bad))
    trace, rep = run_cxx(case, env)
    if trace:
        out = speedscope_export(case, env, trace, rep, validator, "bytes", phases=False)
        names = {f.get("name") for f in json.loads(out)["shared"]["frames"]} if out else set()
        case.check("cxx speedscope: C++ names and unknown functions ('?? [module]') come through",
                   VECTOR_PUSH_BACK in names and unknown_names(rep) <= names,
                   "unknown in the report: %r; frames: %r" % (sorted(unknown_names(rep)), sorted(names)[:5]))
    return case


# ---------------------------------------------------------------------------
# usage


def usage_message(err):
    """The lines of a usage error, less the CLI's standard hint line."""
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return [ln for ln in lines if ln != "Try 'memviz help' for usage."]


def one_line_error(case, what, cmd, want_rc, mention):
    rc, out, err, _ = rt.run(cmd)
    lines = usage_message(err)
    case.eq("%s: exit code" % what, want_rc, rc)
    case.check("%s: a one-line message 'memviz...' naming %r, nothing on stdout" % (what, mention),
               len(lines) == 1 and lines[0].startswith("memviz") and mention in lines[0] and not out,
               "stderr %r, %d bytes on stdout" % (lines, len(out)))


def pprof_to_terminal(case, env, trace):
    """pprof is binary: to a terminal it is refused (exit 2), nothing written."""
    master, slave = pty.openpty()
    try:
        p = subprocess.run([env.memviz, "export", "--format", "pprof", trace], stdout=slave,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=rt.RUN_TIMEOUT)
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    try:
        written = os.read(master, 4096)
    except OSError:
        written = b""
    os.close(master)
    lines = usage_message(p.stderr)
    case.check("export --format pprof to a terminal: exit 2, one-line message, nothing written",
               p.returncode == 2 and len(lines) == 1 and lines[0].startswith("memviz") and not written,
               "exit %d, stderr %r, %d bytes written" % (p.returncode, lines, len(written)))


def case_export_stacks_usage(env, workroot):
    case = rt.Case("export-stacks-usage", workroot)
    trace = os.path.join(case.dir, "phases.mvz")
    rc, _, err, _ = rt.run([env.memviz, "run", "-o", trace, "--", env.prog("phases")], cwd=case.dir)
    if not case.check("phases traced", rc == 0 and os.path.isfile(trace), rt.tail(err)):
        return case
    m = env.memviz
    one_line_error(case, "export --format nosuch", [m, "export", "--format", "nosuch", trace], 2, "nosuch")
    one_line_error(case, "export --cost nosuch", [m, "export", "--format", "collapsed", "--cost", "nosuch",
                                                  trace], 2, "nosuch")
    one_line_error(case, "export --cost nosuch (speedscope)",
                   [m, "export", "--format", "speedscope", "--cost", "nosuch", trace], 2, "nosuch")
    one_line_error(case, "export of a missing trace",
                   [m, "export", "--format", "collapsed", os.path.join(case.dir, "missing.mvz")], 1,
                   "missing.mvz")
    pprof_to_terminal(case, env, trace)
    case.check("nothing but the trace was written", sorted(os.listdir(case.dir)) == ["phases.mvz"],
               "files: %s" % sorted(os.listdir(case.dir)))
    return case


CASES = [
    ("export-collapsed", case_export_collapsed),
    ("export-pprof", case_export_pprof),
    ("export-speedscope", case_export_speedscope),
    ("export-stacks-usage", case_export_stacks_usage),
]
