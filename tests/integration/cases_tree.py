"""Integration cases for one view of a process tree: `memviz report
--children` and `memviz export --children` merge the sites of every traced
image, each stack under its program's name.

  report-children-merged
                       forkexec (a parent, a forked child, a forked child
                       that execs churn; every number known): the merged
                       sites are exactly the images' sites, each under its
                       program's frame; totals are the images' sums; text,
                       JSON and the exports agree; a window is refused
"""
import collections
import os
import re

import run_tests as rt


def image_sites(case, env, d):
    """{(program, functions innermost first): [allocations, at_peak, leaked]}
    summed over the reports of every trace in d, and the reports."""
    sums = collections.defaultdict(lambda: [0, 0, 0])
    reps = []
    for f in sorted(os.listdir(d)):
        if not f.endswith(".mvz"):
            continue
        rep = rt.report_json(case, env, os.path.join(d, f), f)
        if rep is None:
            return None, None
        reps.append(rep)
        argv = (rep.get("process") or {}).get("argv") or ["?"]
        prog = os.path.basename(argv[0])
        for s in rep.get("sites") or []:
            key = (prog, tuple(fr.get("function") for fr in s.get("frames") or []))
            v = sums[key]
            v[0] += s.get("allocations", 0)
            v[1] += s.get("at_peak_bytes", 0)
            v[2] += s.get("leaked_bytes", 0)
    return {k: v for k, v in sums.items() if any(v)}, reps


def merged_sites(rep):
    sums = collections.defaultdict(lambda: [0, 0, 0])
    for s in rep.get("sites") or []:
        frames = [fr.get("function") for fr in s.get("frames") or []]
        if not frames:
            continue
        v = sums[(frames[-1], tuple(frames[:-1]))]
        v[0] += s.get("allocations", 0)
        v[1] += s.get("at_peak_bytes", 0)
        v[2] += s.get("leaked_bytes", 0)
    return {k: v for k, v in sums.items() if any(v)}


def by_function(sites, func):
    """The sums of the sites whose innermost frame is func, by program."""
    got = {}
    for (prog, funcs), v in sites.items():
        if funcs and funcs[0] == func:
            got[prog] = [a + b for a, b in zip(got.get(prog, [0, 0, 0]), v)]
    return got


def check_merged_json(case, env, trace, want, reps):
    rc, out, err, _ = rt.run([env.memviz, "report", "--children", "--json", "--all-sites", trace],
                             timeout=rt.REPORT_TIMEOUT)
    case.eq("report --children --json exits 0", 0, rc)
    try:
        rep = rt.json.loads(out.decode())
    except ValueError:
        case.check("report --children --json: JSON", False, rt.tail(out))
        return None
    got = merged_sites(rep)
    case.eq("merged sites == the images' sites, each under its program's frame", want, got)
    case.eq("merged: forkexec's forked child's 3 blocks of 2,222 B, under forkexec",
            {"forkexec": [3, 6666, 6666]}, by_function(got, "child_work"))
    case.eq("merged: images read", len(reps), (rep.get("merged_tree") or {}).get("images"))
    summ = rep.get("summary") or {}
    for k in ("allocations", "frees", "allocated_bytes", "peak_bytes", "leaked_bytes",
              "leaked_blocks", "temporary"):
        case.eq("merged summary %s == the sum over the images" % k,
                sum((r.get("summary") or {}).get(k, 0) for r in reps), summ.get(k))
    case.eq("merged summary: threads == the images' threads",
            sum((r.get("summary") or {}).get("threads", 0) for r in reps), summ.get("threads"))
    return rep


def collapsed_totals(text):
    """{outermost frame: summed value} of a collapsed file."""
    got = collections.Counter()
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        got[stack.split(";")[0]] += int(value)
    return dict(got)


def check_exports(case, env, trace, rep):
    for cost, key in (("leaked", "leaked_bytes"), ("allocations", "allocations")):
        rc, out, err, _ = rt.run([env.memviz, "export", "--children", "--format", "collapsed",
                                  "--cost", cost, trace], timeout=rt.REPORT_TIMEOUT)
        case.eq("export --children collapsed --cost %s exits 0" % cost, 0, rc)
        want = collections.Counter()
        for s in rep.get("sites") or []:
            want[(s.get("frames") or [{}])[-1].get("function")] += s.get(key, 0)
        case.eq("collapsed --cost %s: per program == the merged report's" % cost,
                {k: v for k, v in want.items() if v}, collapsed_totals(out.decode()))
    rc, out, err, _ = rt.run([env.memviz, "export", "--children", "--format", "speedscope",
                              trace], timeout=rt.REPORT_TIMEOUT)
    try:
        doc = rt.json.loads(out.decode())
        frames = doc["shared"]["frames"]
        prof = doc["profiles"][0]
        roots = {frames[s[0]]["name"] for s in prof["samples"]}
        total = sum(prof["weights"])
    except (ValueError, KeyError, IndexError, TypeError):
        case.check("export --children speedscope: a speedscope document", False, rt.tail(out))
    else:
        case.eq("speedscope --children: every stack starts at a program",
                {"forkexec", "churn"}, roots)
        case.eq("speedscope --children: weights == the merged peak (images' peaks summed)",
                (rep.get("summary") or {}).get("peak_bytes"), total)
    rc, out, err, _ = rt.run([env.memviz, "export", "--children", "--format", "massif", trace],
                             timeout=rt.REPORT_TIMEOUT)
    heaps = [int(v) for v in re.findall(rb"^mem_heap_B=(\d+)$", out, re.M)]
    peaks = [int(v) for v in re.findall(rb"^n\d+: (\d+) \(heap allocation functions\)", out,
                                        re.M)]
    case.check("massif --children: the summed heap's highest point is at least the largest "
               "image's peak (4,444 B for forkexec's parent)", heaps and max(heaps) >= 4444,
               repr(heaps))
    case.check("massif --children: and at most the images' peaks summed",
               heaps and max(heaps) <= (rep.get("summary") or {}).get("peak_bytes", 0),
               repr(heaps))
    case.eq("massif --children: the peak's tree is the merged at-peak sites",
            [(rep.get("summary") or {}).get("peak_bytes")], peaks)
    rc, out, err, _ = rt.run([env.memviz, "export", "--children", "--format", "pprof", "-o",
                              os.path.join(case.dir, "t.pb.gz"), trace])
    case.eq("export --children pprof exits 0", 0, rc)
    summ = rep.get("summary") or {}
    rc, out, err, _ = rt.run([env.memviz, "export", "--children", "--format", "callgrind", trace])
    events = re.search(rb"^events: (.*)$", out, re.M)
    totals = re.search(rb"^totals: (.*)$", out, re.M)
    if case.check("callgrind --children: events and totals lines", rc == 0 and events and totals,
                  rt.tail(out)):
        got = dict(zip(events.group(1).split(), map(int, totals.group(1).split())))
        case.check("callgrind --children: its allocation total is the merged report's",
                   summ.get("allocations") in got.values(), repr(got))
    rc, out, err, _ = rt.run([env.memviz, "export", "--children", "--format", "chrome", trace])
    try:
        doc = rt.json.loads(out.decode())
        heap = [e for e in doc.get("traceEvents") or [] if e.get("name") == "heap"]
    except ValueError:
        heap = None
    case.check("chrome --children: a trace with the tree's heap counter", rc == 0 and heap,
               rt.tail(out))


def case_children_merged(env, workroot):
    case = rt.Case("report-children-merged", workroot)
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", "t.mvz", "--", env.prog("forkexec"),
                              env.prog("churn")], cwd=case.dir)
    case.eq("run exit code", 0, rc)
    trace = os.path.join(case.dir, "t.mvz")
    want, reps = image_sites(case, env, case.dir)
    if want is None:
        return case
    case.eq("four images: forkexec, its forked child, the fork that exec'd, churn", 4, len(reps))
    rep = check_merged_json(case, env, trace, want, reps)
    rc, out, err, _ = rt.run([env.memviz, "report", "--children", "--top", "2", trace])
    text = out.decode(errors="replace")
    case.check("report --children: the tree, then the merged report",
               "Process tree: 4 traced image(s)" in text and "and its process tree, merged" in text
               and "at each image's own peak" in text, rt.tail(out))
    if rep is not None:
        check_exports(case, env, trace, rep)
    for cmd in (["report", "--children", "--from", "0.1"], ["report", "--children", "--at", "0"],
                ["export", "--children", "--format", "collapsed", "--to", "1"]):
        rc, out, err, _ = rt.run([env.memviz] + cmd + [trace])
        case.check("%s: refused, saying why" % " ".join(cmd),
                   rc == 2 and b"--children merges whole runs" in err.split(b"\n")[0],
                   "%s %r" % (rc, err))
    return case


CASES = [
    ("report-children-merged", case_children_merged),
]
