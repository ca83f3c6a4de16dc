"""Integration case for the instrumentation API (include/memviz.h) in the
trace and `memviz report`, on instrumented (linked with the stub library):
phase "load" keeps 100 blocks of 1,000 bytes; phase "serve" makes 1,000
requests (counter "requests", each a 64-byte block freed at once) and keeps
50 blocks of 2,000 bytes; value "queue_length" 17, double "hit_ratio"
0.25; two log lines; phase "time": stopwatch "work" times 5 sections of
2 ms in main and 3 in a second thread; tag "node": 100 blocks of 48 bytes
marked, 40 freed.

  user-tables      tablewatch (C++): include/memviz.hpp's adapter reads an
                   std::unordered_map under the program's lock (elements,
                   buckets, empty buckets, longest chain as the program
                   counts them), and a polled value
  user-api         without memviz the program runs (the stub); under it the
                   report lists the instruments with their last values
                   (a stopwatch: sections and time per thread and in all),
                   the phases in order, the log; JSON the same exactly;
                   --phase serve and --phase load report exactly their
                   allocations; the timeline marks phases, log lines and
                   snapshots; an unknown phase and --phase with --from
                   are errors
  user-fork        forkcount: a forked child's trace defines the
                   instruments again and has their values (the parent's
                   count at the fork and the child's own since)
"""
import json
import re

import run_tests as rt


def report_json(case, env, trace, args, what):
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--top", "0"] + args + [trace])
    if not case.check("%s: exits 0" % what, rc == 0, rt.tail(err)):
        return None
    try:
        return json.loads(out.decode())
    except ValueError:
        case.check("%s: JSON parses" % what, False, rt.tail(out))
        return None


def case_user(env, workroot):
    case = rt.Case("user-api", workroot)
    rc, out, err, _ = rt.run([env.prog("instrumented")])
    case.eq("without memviz the program runs unchanged (the stub library)", 0, rc)
    trace = rt.memviz_run(case, env, "instrumented")
    if not trace:
        return case
    doc = report_json(case, env, trace, [], "report")
    if doc:
        ins = doc.get("instruments") or []
        case.eq("the instruments and their last values",
                [{"name": "requests", "kind": "counter", "value": 1000},
                 {"name": "queue_length", "kind": "value", "value": 17},
                 {"name": "hit_ratio", "kind": "value", "value": 0.25}], ins[:3])
        sw = ins[3] if len(ins) > 3 else {}
        tag = ins[4] if len(ins) > 4 else {}
        case.eq("the string value: its last text (set at the end), quotes and newline kept",
                {"name": "mode", "kind": "value", "value": 'done, with "quotes"\n'},
                ins[5] if len(ins) > 5 else None)
        case.eq("the tag: 100 marked (a second mark and a mark of no block ignored), 60 live "
                "(2,880 bytes) at the end, at most 4,800 bytes",
                ["tag", "node", 100, 60, 2880, 4800],
                [tag.get("kind"), tag.get("name"), tag.get("marked"), tag.get("live_blocks"),
                 tag.get("live_bytes"), tag.get("max_bytes")])
        threads = sorted((t.get("count"), t.get("total_ns")) for t in sw.get("threads") or [])
        case.check("the stopwatch: 8 sections, 3 in one thread and 5 in main, each at least "
                   "its 2 ms sleep, the total their sum",
                   sw.get("kind") == "stopwatch" and sw.get("count") == 8
                   and [c for c, _ in threads] == [3, 5]
                   and threads[0][1] >= 6e6 and threads[1][1] >= 10e6
                   and sw.get("total_ns") == threads[0][1] + threads[1][1]
                   and sw.get("total_ns") < 2e9, repr(sw))
        case.eq("the phases, in order", ["load", "serve", "time"],
                [p.get("name") for p in doc.get("phases") or []])
        case.eq("the log", ["loaded 100 entries", "served 1000 requests"],
                [l.get("text") for l in doc.get("log") or []])
        times = [p.get("t_ns") for p in doc.get("phases") or []] + \
            [l.get("t_ns") for l in doc.get("log") or []]
        # load, serve, time; loaded, served
        case.check("phases and log lines are timed within the run, in order",
                   times[0] < times[3] < times[1] < times[4] < times[2]
                   <= doc["summary"]["duration_ns"], repr(times))
    for phase, want in (("serve", [1050, 1000 * 64 + 50 * 2000]), ("load", [100, 100 * 1000])):
        d = report_json(case, env, trace, ["--phase", phase], "--phase " + phase)
        if d:
            case.eq("--phase %s: exactly its allocations and bytes" % phase, want,
                    [d["summary"]["allocations"], d["summary"]["allocated_bytes"]])
    rc, out, err, _ = rt.run([env.memviz, "report", trace])
    case.check("text: instruments, phases and log",
               rc == 0 and b"counter  requests" in out and b"hit_ratio" in out
               and b'"load" at' in out and b"served 1000 requests" in out, rt.tail(out))
    case.check("text: the string value quoted on one line, its quotes and newline escaped",
               rc == 0 and re.search(rb'^  value +mode +"done, with \\"quotes\\"\\n"$', out, re.M),
               rt.tail(out))
    rc, out, err, _ = rt.run([env.memviz, "retain", "--json", trace])
    tags = json.loads(out.decode()).get("tags") if rc == 0 else None
    case.eq("retain: the tag's deep size at exit: its 60 nodes, their 60 keys and the block "
            "they share, once", [{"name": "node", "blocks": 60, "bytes": 2880,
                                  "deep_bytes": 4840, "deep_blocks": 121}], tags)
    rc, out, err, _ = rt.run([env.memviz, "timeline", "--json", trace])
    try:
        marks = [(m["kind"], m["text"]) for m in json.loads(out.decode()).get("marks") or []]
    except (ValueError, KeyError, TypeError):
        marks = None
    case.eq("timeline marks the phases, the log lines and the snapshot at exit, in time order",
            [("phase", "load"), ("log", "loaded 100 entries"), ("phase", "serve"),
             ("log", "served 1000 requests"), ("phase", "time"), ("snapshot", "exit")], marks)
    rc, out, err, _ = rt.run([env.memviz, "timeline", trace])
    case.check("the chart has the marks line and their list",
               rc == 0 and b"marks (P phase, L log line, S snapshot):" in out
               and b"  P " in out and b"serve" in out, rt.tail(out))
    rc, out, err, _ = rt.run([env.memviz, "report", "--phase", "nope", trace])
    case.check("--phase nope: one line naming the phases, exit 1",
               rc == 1 and b"no phase named 'nope' (it has: load, serve, time)" in err, repr(err))
    rc, out, err, _ = rt.run([env.memviz, "report", "--phase", "load", "--from", "1", trace])
    case.check("--phase with --from: usage error", rc == 2, repr(err))
    return case


def case_tables(env, workroot):
    case = rt.Case("user-tables", workroot)
    rc, plain, err, _ = rt.run([env.prog("tablewatch")])
    case.eq("without memviz the program runs (the stub)", 0, rc)
    # the table is filled the same way every run: the same four numbers
    trace = rt.memviz_run(case, env, "tablewatch", stdout=plain)
    if not trace:
        return case
    want = [int(x) for x in plain.split()] if len(plain.split()) == 4 else None
    doc = report_json(case, env, trace, [], "report")
    if doc and want:
        got = {i.get("name"): i.get("value") for i in doc.get("instruments") or []}
        case.eq("memviz::watch_table: the table's elements, buckets, empty buckets and longest "
                "chain, as the program sees them; the polled value 42",
                want + [42], [got.get("cache.elements"), got.get("cache.buckets"),
                              got.get("cache.empty_buckets"), got.get("cache.longest_chain"),
                              got.get("answer")])
    return case


def case_fork(env, workroot):
    case = rt.Case("user-fork", workroot)
    trace = rt.memviz_run(case, env, "forkcount")
    if not trace:
        return case
    doc = report_json(case, env, trace, [], "parent's report")
    children = (doc or {}).get("children") or []
    if not case.eq("one forked child", 1, len(children)):
        return case
    child = rt.resolve_trace(children[0].get("trace"), trace, case.dir)
    kid = report_json(case, env, child, [], "child's report")
    for who, rep, jobs, sections in (("parent", doc, 4, 0), ("child", kid, 8, 2)):
        got = {i.get("name"): i for i in (rep or {}).get("instruments") or []}
        case.eq("the %s's trace defines both instruments: counter jobs %d (what the %s "
                "counted, from before the fork on), stopwatch step %d sections"
                % (who, jobs, who, sections), [jobs, sections],
                [(got.get("jobs") or {}).get("value"), (got.get("step") or {}).get("count")])
    return case


CASES = [
    ("user-api", case_user),
    ("user-tables", case_tables),
    ("user-fork", case_fork),
]
