"""The complete dynamic call graph (`memviz run --callgraph`, `memviz
callgraph`): on programs whose calls are known exactly (calls.c,
calls_cxx.cpp), built with -finstrument-functions, -pg and -pg -mfentry,
every edge, its count and call sites, the entry points
under the root, the non-local exits (longjmp, a C++ exception, exit from
deep frames), each thread's own graph, and the allocations of every
calling context."""
import json
import os
import re

import run_tests as rt
from cases_ui import browser_ready, http_status, start_ui, stop_ui

ROOT = "(root)"
CALLS_CHECK = os.path.join(rt.REPO, "web", "test", "calls_check.mjs")


def source_line(name, text, nth=1):
    """The line number of the nth line of tests/programs/NAME holding text."""
    path = os.path.join(os.path.dirname(__file__), "..", "programs", name)
    seen = 0
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                seen += 1
                if seen == nth:
                    return i
    raise ValueError("%s not in %s" % (text, name))


def recorded(case, env, prog, agent_env=None, name=None):
    """`memviz run --callgraph PROG`: (trace, the program's stdout) or (None, None)."""
    trace = os.path.join(case.dir, (name or prog) + ".mvz")
    environ = dict(os.environ, **agent_env) if agent_env else None
    rc, out, err, _ = rt.run([env.memviz, "run", "--callgraph", "-o", trace, env.prog(prog)],
                             cwd=case.dir, env=environ)
    if not case.check("%s recorded with --callgraph" % prog, rc == 0 and os.path.isfile(trace),
                      rt.rc_str(rc) + " " + rt.tail(err)):
        return None, None
    return trace, out.decode()


def callgraph_json(case, env, trace, args=(), label="callgraph --json"):
    """`memviz callgraph --json ARGS TRACE`, the same from the ASan build."""
    rc, out, err, _ = rt.run([env.memviz, "callgraph", "--json"] + list(args) + [trace])
    if not case.check("%s exits 0" % label, rc == 0, rt.rc_str(rc) + " " + rt.tail(err)):
        return None
    if env.asan:
        rc2, out2, err2, _ = rt.run([env.asan, "callgraph", "--json"] + list(args) + [trace])
        case.check("%s: the ASan build says the same, cleanly" % label,
                   rc2 == 0 and out2 == out and not rt.sanitizer_complaint(err2),
                   rt.rc_str(rc2) + " " + rt.tail(err2))
    return json.loads(out)


def edges_of(doc):
    return {(e["caller"], e["callee"]): e for e in doc["edges"]}


def contexts(doc):
    """{(function, ...): context} for every context of the tree, by path."""
    out, todo = {}, [((), doc["contexts"])]
    while todo:
        path, c = todo.pop()
        here = path + (c["function"],) if c["function"] != ROOT else path
        out[here] = c
        todo.extend((here, k) for k in c["children"])
    return out


def site_lines(edge):
    return sorted((s["line"], s["calls"]) for s in edge["sites"])


CALLS_EDGES = {
    (ROOT, "ctor"): 1, (ROOT, "main"): 1, (ROOT, "at_end"): 1, (ROOT, "worker"): 2,
    ("ctor", "leaf"): 1, ("at_end", "leaf"): 1,
    ("main", "leaf"): 10, ("main", "two_sites"): 1, ("two_sites", "leaf"): 2,
    ("main", "fib"): 1, ("fib", "fib"): 464,
    ("main", "apply"): 2, ("apply", "twice"): 3, ("apply", "leaf"): 2,
    ("main", "jump_outer"): 1, ("jump_outer", "jump1"): 1, ("jump1", "jump2"): 1,
    ("jump2", "jump3"): 1, ("jump_outer", "after_jump"): 1, ("after_jump", "leaf"): 1,
    ("main", "make_block"): 5, ("main", "keep"): 1, ("keep", "make_block"): 3,
    ("main", "nap"): 1, ("worker", "leaf"): 200, ("worker", "make_block"): 14,
    ("main", "deep_exit1"): 1, ("deep_exit1", "deep_exit2"): 1,
}


def check_calls_edges(case, doc, compares):
    edges = edges_of(doc)
    want = dict(CALLS_EDGES)
    want[("main", "compare")] = compares
    case.eq("every edge and its count", sorted(want.items()),
            sorted((k, e["calls"]) for k, e in edges.items()))
    line = lambda text, nth=1: source_line("calls.c", text, nth)
    case.eq("two_sites calls leaf from two sites, once each",
            [(line("leaf(1);"), 1), (line("leaf(2);"), 1)], site_lines(edges[("two_sites", "leaf")]))
    case.eq("main calls leaf from one site", [(line("leaf(i);", 2), 10)],
            site_lines(edges[("main", "leaf")]))
    case.eq("main calls apply from two sites", [(line("    apply(twice, 3);"), 1),
                                                (line("    apply(leaf, 2);"), 1)],
            site_lines(edges[("main", "apply")]))
    twice, leaf = edges[("apply", "twice")]["sites"], edges[("apply", "leaf")]["sites"]
    case.check("apply's one call site calls both twice and leaf (a function pointer)",
               len(twice) == 1 and len(leaf) == 1 and twice[0]["address"] == leaf[0]["address"] and
               twice[0]["line"] == line("sum += f(i);"), repr((twice, leaf)))
    fib = edges[("fib", "fib")]["sites"]
    case.check("fib calls itself from two sites of one line, 232 calls each",
               sorted(s["calls"] for s in fib) == [232, 232] and
               {s["line"] for s in fib} == {line("fib(n - 1) + fib(n - 2)")}, repr(fib))
    cmp_site = edges[("main", "compare")]["sites"]
    case.check("qsort's calls of compare go under main, marked as made by code not instrumented",
               len(cmp_site) == 1 and cmp_site[0]["via"] and "msort" in cmp_site[0]["via"],
               repr(cmp_site))
    direct = [k for k, e in edges.items() if k[0] != ROOT and k != ("main", "compare") and
              any(s["via"] for s in e["sites"])]
    case.eq("no other edge is marked as made by code not instrumented", [], direct)


def check_calls_functions(case, doc):
    fns = {f["name"]: f for f in doc["functions"]}
    case.eq("fib: 465 calls", 465, fns["fib"]["calls"])
    case.eq("leaf: 217 calls", 217, fns["leaf"]["calls"])
    nap, main = fns["nap"], fns["main"]
    case.check("nap's inclusive and self time are its 50 ms sleep at least",
               nap["inclusive_ns"] >= 50e6 and nap["self_ns"] >= 50e6 * 0.98, repr(nap))
    case.check("main's inclusive time holds nap's",
               main["inclusive_ns"] >= nap["inclusive_ns"] and main["self_ns"] < main["inclusive_ns"],
               repr(main))
    case.check("fib's inclusive time counts the recursion once",
               fns["fib"]["inclusive_ns"] <= main["inclusive_ns"] and
               fns["fib"]["self_ns"] <= fns["fib"]["inclusive_ns"], repr(fns["fib"]))
    decl = source_line("calls.c", "int fib(int n)")
    case.check("a function's line is where it begins", fns["fib"]["line"] in (decl, decl + 1),
               repr(fns["fib"]))


def check_calls_contexts(case, doc):
    ctx = contexts(doc)
    case.eq("entry points under the root: the main thread's in the order they began, then the "
            "other threads'", ["ctor", "main", "at_end", "worker"], [c["function"] for c in doc["contexts"]["children"]])
    want = {("main", "make_block"): (5, 320, 0), ("main", "keep", "make_block"): (3, 384, 384),
            ("worker", "make_block"): (14, 448, 0)}
    for path, (n, b, leaked) in want.items():
        c = ctx.get(path)
        case.check("context %s: %d allocations, %d bytes, %d leaked" % (" > ".join(path), n, b, leaked),
                   c and (c["allocations"], c["bytes"], c["leaked_bytes"]) == (n, b, leaked), repr(c))
    keep = ctx.get(("main", "keep"))
    case.check("keep's own allocations 0, its total its callee's 3",
               keep and keep["allocations"] == 0 and keep["total"]["allocations"] == 3, repr(keep))
    case.check("after the longjmp, after_jump is called from jump_outer, not under jump3",
               ("main", "jump_outer", "after_jump", "leaf") in ctx and
               not any("after_jump" in p and "jump3" in p for p in ctx), "")
    case.check("exit from deep frames: at_end runs from the root, not under deep_exit2",
               ("at_end", "leaf") in ctx and not any("at_end" in p[1:] for p in ctx), "")
    root = doc["contexts"]
    case.eq("every allocation is in some context's total", root["total"]["allocations"],
            sum(c["allocations"] for c in ctx.values()))
    case.eq("no exit matched no call", 0, doc["unmatched_exits"])


def check_thread(case, env, trace, doc):
    workers = [t["tid"] for t in doc["threads"] if t["ended"]]
    if not case.eq("two threads ended, one did not (main)", 2, len(workers)):
        return
    one = callgraph_json(case, env, trace, ["--thread", str(workers[0])], "--thread")
    if one:
        case.eq("one worker thread's graph alone",
                [((ROOT, "worker"), 1), (("worker", "leaf"), 100), (("worker", "make_block"), 7)],
                sorted((k, e["calls"]) for k, e in edges_of(one).items()))


def check_text(case, env, trace):
    rc, out, err, _ = rt.run([env.memviz, "callgraph", trace])
    text = out.decode()
    case.check("text: functions, hottest edges and contexts",
               rc == 0 and "Hottest edges" in text and re.search(r"464\s+fib -> fib", text) and
               "Calling contexts" in text, text[:2000] + rt.tail(err))
    rc, out, err, _ = rt.run([env.memviz, "callgraph", "--function", "leaf", trace])
    text = out.decode()
    callers = text[text.find("Callers"):text.find("Callees")]
    case.check("--function leaf: its seven callers", rc == 0 and all(
        "%s -> leaf" % c in callers for c in
        ("worker", "main", "two_sites", "apply", "after_jump", "at_end", "ctor")), text)
    rc, out, err, _ = rt.run([env.memviz, "callgraph", "--function", "no_such_fn", trace])
    case.check("--function of no function: one line, status 1",
               rc == 1 and err.decode().count("\n") == 1, rt.rc_str(rc) + " " + err.decode())


def check_report(case, env, trace):
    """The allocation stacks made from the shadow stack, in memviz report."""
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--all-sites", trace])
    if not case.check("report on a --callgraph trace", rc == 0, rt.tail(err)):
        return
    rep = json.loads(out)
    stacks = [[f["function"] for f in s["frames"]] for s in rep["sites"]]
    keep = [s for s in stacks if s[:3] == ["make_block", "keep", "main"]]
    case.check("keep's allocations' stack: make_block < keep < main", keep, repr(stacks))
    marks = [f for s in rep["sites"] for f in s["frames"] if int(f.get("address", "0"), 16) >= 1 << 63]
    case.eq("no context mark shows as a frame", [], marks)
    printf = [s for s in stacks if s and "doallocate" in s[0]]
    case.check("an allocation in code not instrumented keeps its instrumented caller (main)",
               printf and "main" in printf[0], repr(printf))


def callgraph_case(env, workroot, name, prog):
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    m = re.search(r"compare (\d+)", out)
    case.check("calls printed its comparator's calls", m, out)
    doc = callgraph_json(case, env, trace)
    if doc and m:
        check_calls_edges(case, doc, int(m.group(1)))
        check_calls_functions(case, doc)
        check_calls_contexts(case, doc)
        check_thread(case, env, trace, doc)
    check_text(case, env, trace)
    check_report(case, env, trace)
    rc, out, err, _ = rt.run([env.memviz, "report", trace])
    case.check("the report's summary counts the calls and names memviz callgraph",
               doc and ("call graph:       {:,} call(s) on 3 thread(s)".format(doc["calls"])
                        in out.decode()), rt.tail(out))
    # (compare's calls depend on qsort's input: left out)
    edges = lambda d: sorted((k, e["calls"]) for k, e in edges_of(d).items()
                             if k != ("main", "compare"))
    for every, what in (("exact", "every call timed"), ("1024", "one call in 1024 timed")):
        other, _ = recorded(case, env, prog, {"MEMVIZ_CALLGRAPH_TIME": every}, "time-" + every)
        doc2 = callgraph_json(case, env, other, label=what) if other else None
        if not (doc and doc2):
            continue
        case.eq("%s (MEMVIZ_CALLGRAPH_TIME=%s): the same edges" % (what, every), edges(doc),
                edges(doc2))
        fib = {f["name"]: f for f in doc2["functions"]}["fib"]
        if every == "exact":
            case.check("and fib's 465 calls timed: inclusive >= self > 0",
                       fib["inclusive_ns"] >= fib["self_ns"] > 0, repr(fib))
    if prog != "calls":
        case.check("-pg: gprof's gmon.out is not written under --callgraph",
                   not os.path.exists(os.path.join(case.dir, "gmon.out")), "")
    return case


def exception_case(env, workroot, name, prog):
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    case.eq("the program's own output", "caught 3\n", out)
    doc = callgraph_json(case, env, trace)
    if not doc:
        return case
    edges = {k: e["calls"] for k, e in edges_of(doc).items()}
    want = {("main", "level1(int)"): 4, ("level1(int)", "level2(int)"): 4,
            ("level2(int)", "level3(int)"): 4, ("main", "after_catch()"): 3}
    case.eq("the edges through the exception", want, {k: edges.get(k) for k in want})
    ctx = contexts(doc)
    case.eq("after_catch is called from main alone, never under the frames the exceptions left",
            [("main", "after_catch()")], [p for p in ctx if p and p[-1] == "after_catch()"])
    l3 = ctx.get(("main", "level1(int)", "level2(int)", "level3(int)"))
    case.check("level3's context: the 3 exceptions' allocations",
               l3 and l3["allocations"] == 3, repr(l3 and {k: l3[k] for k in ("allocations", "bytes")}))
    ac = ctx.get(("main", "after_catch()"))
    case.check("after_catch's context: 3 allocations of 32 bytes",
               ac and (ac["allocations"], ac["bytes"]) == (3, 96), repr(ac))
    case.eq("no exit matched no call", 0, doc["unmatched_exits"])
    return case


def case_callgraph_errors(env, workroot):
    case = rt.Case("callgraph-errors", workroot)
    trace = os.path.join(case.dir, "churn.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "--callgraph", "-o", trace, env.prog("churn")])
    case.check("--callgraph on a program without instrumentation: one line on how to build it, "
               "status 1, the program not run",
               rc == 1 and len(err.decode().splitlines()) == 1 and
               "-finstrument-functions" in err.decode()
               and not os.path.exists(trace), rt.rc_str(rc) + " " + err.decode())
    plain = os.path.join(case.dir, "plain.mvz")
    rc, _, err, _ = rt.run([env.memviz, "run", "-o", plain, env.prog("churn")])
    if case.check("churn traced without --callgraph", rc == 0, rt.tail(err)):
        rc, out, err, _ = rt.run([env.memviz, "callgraph", plain])
        case.check("callgraph of a trace without one: one line that says how, status 1",
                   rc == 1 and err.decode().count("\n") == 1 and "--callgraph" in err.decode(),
                   rt.rc_str(rc) + " " + err.decode())
    for args, what in ((["--depth", "x"], "a bad --depth"), (["--thread", "0"], "a bad --thread"),
                       ([], "no file")):
        rc, out, err, _ = rt.run([env.memviz, "callgraph"] + args + ([plain] if args else []))
        case.check("%s: a usage error (status 2, and what was wrong)" % what,
                   rc == 2 and err.decode().startswith("memviz callgraph: "),
                   rt.rc_str(rc) + " " + err.decode())
    for bad in ("3", "2048", "often", ""):
        rc, out, err, _ = rt.run([env.memviz, "run", "--callgraph", "-o", trace,
                                  env.prog("calls")], env=dict(os.environ, MEMVIZ_CALLGRAPH_TIME=bad))
        case.check("MEMVIZ_CALLGRAPH_TIME=%r: one line on what it takes, status 1, the program not "
                   "run" % bad, rc == 1 and len(err.decode().splitlines()) == 1 and
                   "power of two" in err.decode() and not out and not os.path.exists(trace),
                   rt.rc_str(rc) + " " + err.decode())
    inst = os.path.join(case.dir, "calls.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", inst, env.prog("calls")])
    case.check("an instrumented program without --callgraph runs as usual, no call graph",
               rc == 0 and b"compare" in out, rt.tail(err))
    rc, out, err, _ = rt.run([env.memviz, "callgraph", inst])
    case.eq("and its trace has no call graph (status 1)", 1, rc)
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", os.path.join(case.dir, "pg.mvz"),
                              env.prog("calls_pg")], cwd=case.dir)
    case.check("a -pg program without --callgraph: gprof's own mcount still counts (gmon.out)",
               rc == 0 and os.path.getsize(os.path.join(case.dir, "gmon.out")) > 0
               if os.path.exists(os.path.join(case.dir, "gmon.out")) else False, rt.tail(err))
    rc, out, err, _ = rt.run(["gprof", "-b", "-p", env.prog("calls_pg"),
                              os.path.join(case.dir, "gmon.out")])
    # (calls made before the threads start: gprof's mcount drops calls that
    # meet on two threads)
    case.check("and gprof reads twice's 3 calls and apply's 2 from it",
               rc == 0 and re.search(r"\s3\s+.*\btwice$", out.decode(), re.M) and
               re.search(r"\s2\s+.*\bapply$", out.decode(), re.M), out.decode()[-800:])
    return case


def parse_dot(text):
    """{(caller, callee): calls} of `memviz export --format dot`."""
    names = {"root": ROOT}
    for m in re.finditer(r'^  (f\d+) \[label="([^"\\]+)', text, re.M):
        names[m.group(1)] = m.group(2)
    return {(names[m.group(1)], names[m.group(2)]): int(m.group(3).replace(",", ""))
            for m in re.finditer(r'^  (\w+) -> (\w+) \[label="([\d,]+) call', text, re.M)}


def parse_callgrind_calls(text):
    """{(caller, callee): calls} summed over the calls= lines."""
    out, fn, cfn = {}, None, None
    for line in text.splitlines():
        if line.startswith("fn="):
            fn = line[3:]
        elif line.startswith("cfn="):
            cfn = line[4:]
        elif line.startswith("calls="):
            key = (fn, cfn)
            out[key] = out.get(key, 0) + int(line[6:].split()[0])
    return out


def case_callgraph_exports(env, workroot):
    case = rt.Case("callgraph-exports", workroot)
    trace, out = recorded(case, env, "calls")
    doc = callgraph_json(case, env, trace) if trace else None
    m = re.search(r"compare (\d+)", out or "")
    if not doc or not case.check("calls printed its comparator's calls", m, out):
        return case
    want = dict(CALLS_EDGES)
    want[("main", "compare")] = int(m.group(1))
    outs = {}
    for fmt in ("dot", "callgrind", "speedscope"):
        path = os.path.join(case.dir, "calls." + fmt)
        rc, _, err, _ = rt.run([env.memviz, "export", "--format", fmt, "-o", path, trace])
        if case.check("export --format %s" % fmt, rc == 0 and os.path.isfile(path), rt.tail(err)):
            outs[fmt] = open(path).read()
    if "dot" in outs:
        rc, svg, err, _ = rt.run(["dot", "-Tsvg", os.path.join(case.dir, "calls.dot")])
        case.check("graphviz draws the DOT file", rc == 0 and b"<svg" in svg, rt.tail(err))
        case.eq("DOT: every edge and its calls", sorted(want.items()),
                sorted(parse_dot(outs["dot"]).items()))
    if "callgrind" in outs:
        path = os.path.join(case.dir, "calls.callgrind")
        rc, ann, err, _ = rt.run(["callgrind_annotate", path])
        total = doc["contexts"]["total"]["allocations"]
        case.check("callgrind_annotate reads it; its totals hold every allocation",
                   rc == 0 and re.search(r"PROGRAM TOTALS", ann.decode()) and
                   re.search(r"\b%d \(100\.0%%\)" % total, ann.decode()), rt.tail(ann + err))
        case.eq("callgrind: calls= lines carry every edge's calls", sorted(want.items()),
                sorted(parse_callgrind_calls(outs["callgrind"]).items()))
    if "speedscope" in outs:
        check_speedscope(case, doc, json.loads(outs["speedscope"]))
    rc, _, err, _ = rt.run([env.memviz, "export", "--format", "dot", "--to", "0.01", trace])
    case.check("dot of a window: one line (the call graph is the whole run), status 1",
               rc == 1 and len(err.decode().splitlines()) == 1, rt.rc_str(rc) + err.decode())
    return case


def check_speedscope(case, doc, ss):
    schema_path = os.path.join(rt.REPO, "tests", "consumers", "node_modules", "speedscope", "dist",
                               "release", "file-format-schema.json")
    try:
        import jsonschema
        errors = list(jsonschema.Draft7Validator(json.load(open(schema_path))).iter_errors(ss))
        case.check("speedscope: valid against its file-format schema", not errors,
                   "; ".join(e.message[:200] for e in errors[:3]))
    except (ImportError, OSError) as e:
        case.check("speedscope's schema and python3-jsonschema are installed", False, str(e))
    names = [p["name"] for p in ss["profiles"]]
    case.check("speedscope: time first, then bytes and allocations by context",
               names[0].startswith("time") and len(names) == 3, repr(names))
    frames = [f["name"] for f in ss["shared"]["frames"]]
    by_path = {}
    prof = ss["profiles"][1]
    for sample, w in zip(prof["samples"], prof["weights"]):
        by_path[tuple(frames[i] for i in sample)] = w
    case.eq("speedscope: bytes of main > keep > make_block", 384,
            by_path.get(("main", "keep", "make_block")))
    case.eq("speedscope: the bytes add up to the run's", doc["contexts"]["total"]["bytes"],
            sum(prof["weights"]))


SIGNAL_EDGES = {(ROOT, "main"): 1, (ROOT, "on_usr1"): 2, (ROOT, "on_usr2"): 2,
                ("on_usr1", "handled"): 2, ("on_usr2", "handled"): 4, ("main", "deep1"): 2,
                ("deep1", "deep2"): 2}


def signal_case(env, workroot, name, prog):
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    case.eq("sigaction and signal report the program's own handlers", "kept 1 1\n", out)
    doc = callgraph_json(case, env, trace)
    if doc:
        case.eq("signal handlers hang under the root, with their calls", sorted(SIGNAL_EDGES.items()),
                sorted((k, e["calls"]) for k, e in edges_of(doc).items()))
    return case


def case_callgraph_signal(env, workroot):
    return signal_case(env, workroot, "callgraph-signal", "calls_signal")


def case_callgraph_signal_pg(env, workroot):
    """-pg, the second handler on an alternate stack"""
    return signal_case(env, workroot, "callgraph-signal-pg", "calls_signal_pg")


def deep_case(env, workroot, name, prog):
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    case.eq("the program runs as without memviz", "depth 600000\n", out)
    doc = callgraph_json(case, env, trace, ["--depth", "4"])
    if doc:
        fns = {f["name"]: f for f in doc["functions"]}
        case.eq("every call of down is counted, or counted as not counted past the limit",
                600001, fns["down"]["calls"] + doc["uncounted_calls"])
        case.eq("the shadow stack held 2^19 open calls", 2 ** 19 - 1, fns["down"]["calls"])
        case.eq("after the recursion: deep -> leaf, 10 calls, and no exit unmatched",
                [10, 0], [edges_of(doc)[("deep", "leaf")]["calls"], doc["unmatched_exits"]])
    return case


def case_callgraph_deep(env, workroot):
    return deep_case(env, workroot, "callgraph-deep", "calls_deep")


def case_callgraph_deep_pg(env, workroot):
    """-pg: the calls past the limit keep their own return addresses"""
    return deep_case(env, workroot, "callgraph-deep-pg", "calls_deep_pg")


O2_EDGES = {"calls_o2": {(ROOT, "main"): 1, ("main", "rec"): 1, ("rec", "rec"): 10,
                         ("rec", "work"): 10, ("main", "mid"): 2, ("mid", "leaf"): 2},
            "calls_o2_pg": {(ROOT, "main"): 1, ("main", "rec"): 1, ("rec", "rec"): 10,
                            ("rec", "work"): 9, ("main", "work"): 1, ("main", "mid"): 2,
                            ("main", "leaf"): 2}}


def o2_case(env, workroot, name, prog):
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    case.eq("the program runs as without memviz (the real return addresses)",
            "a=4 b=70 work=10\n", out)
    doc = callgraph_json(case, env, trace)
    if doc:
        case.eq("every edge of optimised code, tail calls and exit hooks made tail calls",
                sorted(O2_EDGES[prog].items()), sorted((k, e["calls"]) for k, e in edges_of(doc).items()))
        case.eq("no exit matched no call", 0, doc["unmatched_exits"])
    return case


def case_callgraph_o2(env, workroot):
    """-O2 -finstrument-functions: a void function's exit hook is a tail call"""
    return o2_case(env, workroot, "callgraph-o2", "calls_o2")


def case_callgraph_o2_pg(env, workroot):
    """-O2 -pg: a tail call from a frame whose return address is taken over"""
    return o2_case(env, workroot, "callgraph-o2-pg", "calls_o2_pg")


def lib_case(env, workroot, name, prog, main):
    """calls_lib's program (main: "main", or None when built without
    instrumentation) and its instrumented library"""
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    case.eq("the program's own output", "done\n", out)
    doc = callgraph_json(case, env, trace)
    if doc:
        case.eq("the library's constructor under the root, its calls and main's into it (main "
                "not instrumented: lib_work under the root)",
                sorted([((ROOT, "lib_ctor"), 1), ((ROOT, main or "lib_work"), 1),
                        (("lib_ctor", "lib_helper"), 1), (("lib_work", "lib_helper"), 5)]
                       + ([((main, "lib_work"), 1)] if main else [])),
                sorted((k, e["calls"]) for k, e in edges_of(doc).items()))
        ctx = contexts(doc)
        work = (main, "lib_work", "lib_helper") if main else ("lib_work", "lib_helper")
        case.eq("the allocations of lib_helper's two contexts: 1 under the constructor, 5 under "
                "lib_work", [1, 5], [ctx.get(("lib_ctor", "lib_helper"), {}).get("allocations"),
                                     ctx.get(work, {}).get("allocations")])
    return case


def case_callgraph_lib(env, workroot):
    """an instrumented library: its static constructor is an entry point"""
    return lib_case(env, workroot, "callgraph-lib", "calls_lib", "main")


def case_callgraph_libonly(env, workroot):
    """a program built without instrumentation, linked with an instrumented library"""
    return lib_case(env, workroot, "callgraph-libonly", "calls_libonly", None)


def dispatch_case(env, workroot, name, prog, tail_calls):
    """calls_dispatch: twelve callees in turn, and one callee from twelve
    sites; at -O2 -pg each op's call of leaf is a tail call, leaf then under
    dispatch from the op's own site"""
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    m = re.match(r"ops((?: \d+){12})\n$", out or "")
    if not case.check("the program printed its operations' counts", m, repr(out)):
        return case
    n = [int(x) for x in m.group(1).split()]
    doc = callgraph_json(case, env, trace)
    if not doc:
        return case
    site = lambda k, call: source_line("calls_dispatch.c", call % k)
    by_site = lambda e: sorted((s["line"], s["calls"]) for s in e["sites"])
    want = {("main", "dispatch"): sum(n), ("dispatch", "note"): sum(n)}
    want.update({("dispatch", "op%d" % k): n[k] for k in range(12)})
    if tail_calls:
        want[("dispatch", "leaf")] = sum(n)
    else:
        want.update({("op%d" % k, "leaf"): n[k] for k in range(12)})
    got = {k: e["calls"] for k, e in edges_of(doc).items() if k[0] != ROOT}
    case.eq("every edge's calls", sorted(want.items()), sorted(got.items()))
    edges = edges_of(doc)
    # leaf's tail calls: from the site of the op they replace
    for callee, call in (("note", "note(%d);"), ("leaf", "op%d(x);"))[:2 if tail_calls else 1]:
        e = edges.get(("dispatch", callee))
        case.eq("dispatch -> %s: calls by site, one site per case" % callee,
                sorted((site(k, call), n[k]) for k in range(12)), by_site(e) if e else None)
    case.eq("dispatch -> op3: its case's site only", [(site(3, "op%d(x);"), n[3])],
            by_site(edges[("dispatch", "op3")]) if ("dispatch", "op3") in edges else None)
    return case


def case_callgraph_dispatch(env, workroot):
    """a dispatch (-finstrument-functions)"""
    return dispatch_case(env, workroot, "callgraph-dispatch", "calls_dispatch", False)


def case_callgraph_dispatch_pg(env, workroot):
    """a dispatch whose callees end in tail calls (-O2 -pg)"""
    return dispatch_case(env, workroot, "callgraph-dispatch-pg", "calls_dispatch_pg", True)


def coro_case(env, workroot, name, prog):
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    case.eq("a coroutine's stack switched in and out: the program runs as without memviz",
            "steps 3 work 3\n", out)
    doc = callgraph_json(case, env, trace)
    if doc:
        case.eq("every function's calls counted",
                {"main": 1, "co_main": 1, "co_step": 3, "co_inner": 3, "main_work": 3},
                {f["name"]: f["calls"] for f in doc["functions"]})
    return case


def case_callgraph_coro(env, workroot):
    return coro_case(env, workroot, "callgraph-coro", "calls_coro")


def case_callgraph_coro_pg(env, workroot):
    """-pg: calls on the coroutine's stack are not taken over"""
    return coro_case(env, workroot, "callgraph-coro-pg", "calls_coro_pg")


EXIT_EDGES = {(ROOT, "thr"): 1, ("thr", "t_a"): 1, ("t_a", "t_b"): 1, (ROOT, "main"): 1,
              ("main", "m_deep1"): 1, ("m_deep1", "m_deep2"): 1, (ROOT, "on_sig"): 1,
              ("on_sig", "h_work"): 1, ("main", "after_jump"): 1}


def exit_case(env, workroot, name, prog):
    case = rt.Case(name, workroot)
    trace, out = recorded(case, env, prog)
    if not trace:
        return case
    case.eq("pthread_exit and siglongjmp: the program runs as without memviz",
            "thread 7 jumped 1\n", out)
    doc = callgraph_json(case, env, trace)
    if doc:
        case.eq("pthread_exit from t_b; siglongjmp out of the handler, then main calls after_jump",
                sorted(EXIT_EDGES.items()), sorted((k, e["calls"]) for k, e in edges_of(doc).items()))
        case.eq("no exit matched no call", 0, doc["unmatched_exits"])
    return case


def case_callgraph_exit(env, workroot):
    return exit_case(env, workroot, "callgraph-exit", "calls_exit")


def case_callgraph_exit_pg(env, workroot):
    """-pg: pthread_exit gives the taken-over return addresses back first"""
    return exit_case(env, workroot, "callgraph-exit-pg", "calls_exit_pg")


def case_callgraph(env, workroot):
    """-finstrument-functions"""
    return callgraph_case(env, workroot, "callgraph", "calls")


def case_callgraph_pg(env, workroot):
    """-pg: mcount, returns seen by taking the return address over"""
    return callgraph_case(env, workroot, "callgraph-pg", "calls_pg")


def case_callgraph_fentry(env, workroot):
    """-pg -mfentry: __fentry__"""
    return callgraph_case(env, workroot, "callgraph-fentry", "calls_fentry")


def case_callgraph_patch(env, workroot):
    """-fpatchable-function-entry=5: every entry patched in at load time"""
    return callgraph_case(env, workroot, "callgraph-patch", "calls_patch")


def case_callgraph_filter(env, workroot):
    """--callgraph-filter: only the functions it names are patched in"""
    case = rt.Case("callgraph-filter", workroot)
    trace = os.path.join(case.dir, "calls_patch.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "--callgraph-filter", "main,fib,kee?", "-o", trace,
                              env.prog("calls_patch")], cwd=case.dir)
    if not case.check("recorded with --callgraph-filter", rc == 0, rt.tail(err)):
        return case
    doc = callgraph_json(case, env, trace)
    if doc:
        case.eq("only the edges among main, fib and keep",
                [((ROOT, "main"), 1), (("fib", "fib"), 464), (("main", "fib"), 1), (("main", "keep"), 1)],
                sorted((k, e["calls"]) for k, e in edges_of(doc).items()))
        keep = contexts(doc).get(("main", "keep"))
        case.check("keep's context: the 3 blocks make_block (not patched in) made for it",
                   keep and (keep["allocations"], keep["bytes"]) == (3, 384), repr(keep))
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--all-sites", trace])
    stacks = [[f["function"] for f in s["frames"]] for s in json.loads(out)["sites"]] if rc == 0 else []
    case.check("allocation stacks are unwound whole: make_block < keep < main < ... < _start",
               any(s[:3] == ["make_block", "keep", "main"] and "_start" in s for s in stacks),
               repr(stacks))
    rc, out, err, _ = rt.run([env.memviz, "run", "--callgraph-filter", "main", "-o",
                              os.path.join(case.dir, "x.mvz"), env.prog("calls")])
    case.check("--callgraph-filter on a -finstrument-functions build: one line, status 1",
               rc == 1 and len(err.decode().splitlines()) == 1 and "patchable" in err.decode(),
               rt.rc_str(rc) + " " + err.decode())
    return case


def case_callgraph_exception(env, workroot):
    return exception_case(env, workroot, "callgraph-exception", "calls_cxx")


def case_callgraph_exception_pg(env, workroot):
    """the exception's unwinder must get the taken-over return addresses back"""
    return exception_case(env, workroot, "callgraph-exception-pg", "calls_cxx_pg")


def run_calls_check(case, url, label):
    argv = ["node", CALLS_CHECK, url]
    if os.environ.get("MEMVIZ_UI_SHOTS"):
        argv.append(os.environ["MEMVIZ_UI_SHOTS"])
    rc, out, err, _ = rt.run(argv, timeout=120)
    if not case.check("%s: calls_check.mjs exits 0" % label, rc == 0,
                      "%s; %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    got = json.loads(out.decode())
    case.eq("%s: no console error, page error or failed request" % label, [[], [], []],
            [got["console_errors"], got["page_errors"], got["failed_requests"]])
    return got


def check_calls_view(case, got, doc, label):
    """The Call graph view against /api/callgraph's document."""
    t = got["time"]
    case.eq("%s: the status counts the functions, edges and calls" % label,
            [len(doc["functions"]), len(doc["edges"]), doc["calls"]],
            [t["functions"], t["edges"], t["calls"]])
    case.eq("%s: a row per function with its calls" % label,
            sorted((f["name"], f["calls"]) for f in doc["functions"]), sorted(map(tuple, t["rows"])))
    case.eq("%s: the flame graph by time weighs the run's time" % label,
            doc["contexts"]["inclusive_ns"], t["flame_total"])
    case.check("%s: and draws frames" % label, t["frames"] > 5, repr(t))
    want = sorted((e["caller"], e["calls"]) for e in doc["edges"] if e["callee"] == "leaf")
    panel = got.get("panel") or {}
    case.eq("%s: leaf's callers, from its row" % label, want,
            sorted((c[0], c[1]) for c in panel.get("callers", [])))
    case.eq("%s: by bytes: the run's bytes" % label, doc["contexts"]["total"]["bytes"],
            got.get("bytes", {}).get("flame_total"))
    case.check("%s: hovering a frame describes it" % label, "call(s)" in (got.get("hover") or ""),
               repr(got.get("hover")))


def case_callgraph_ui(env, workroot):
    case = rt.Case("callgraph-ui", workroot)
    if not browser_ready(case):
        return case
    trace, out = recorded(case, env, "calls")
    if not trace:
        return case
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("memviz ui prints its address", url, ""):
        p.kill()
        return case
    try:
        status, body = http_status(url.rstrip("/") + "/api/callgraph")
        doc = json.loads(body) if status == 200 else None
        if case.check("/api/callgraph answers", doc and doc.get("memviz_callgraph") == 1, repr(body[:300])):
            case.eq("/api/callgraph: the edges of memviz callgraph --json",
                    sorted((k, e["calls"]) for k, e in edges_of(callgraph_json(case, env, trace)).items()),
                    sorted((k, e["calls"]) for k, e in edges_of(doc).items()))
            got = run_calls_check(case, url, "ui")
            if got:
                check_calls_view(case, got, doc, "ui")
    finally:
        stop_ui(case, p, "ui")
    html = os.path.join(case.dir, "calls.html")
    rc, _, err, _ = rt.run([env.memviz, "html", "-o", html, trace], timeout=120)
    if case.check("memviz html of it", rc == 0, rt.tail(err)) and doc:
        got = run_calls_check(case, "file://" + html, "html")
        if got:
            check_calls_view(case, got, doc, "html")
    plain = os.path.join(case.dir, "churn.mvz")
    rc, _, err, _ = rt.run([env.memviz, "run", "-o", plain, env.prog("churn")])
    p, url = start_ui(case, env.memviz, plain)
    try:
        if case.check("memviz ui on a trace without a call graph", url, ""):
            status, body = http_status(url.rstrip("/") + "/api/callgraph")
            case.eq("/api/callgraph says it has none", [200, {"callgraph": False}],
                    [status, json.loads(body) if status == 200 else body.decode()])
            got = run_calls_check(case, url, "no call graph")
            case.check("the view says how to record one", got and "--callgraph" in got["time"]["status"],
                       repr(got and got["time"]))
    finally:
        stop_ui(case, p, "no call graph")
    return case


CASES = [
    ("callgraph", case_callgraph),
    ("callgraph-pg", case_callgraph_pg),
    ("callgraph-fentry", case_callgraph_fentry),
    ("callgraph-patch", case_callgraph_patch),
    ("callgraph-o2", case_callgraph_o2),
    ("callgraph-lib", case_callgraph_lib),
    ("callgraph-libonly", case_callgraph_libonly),
    ("callgraph-dispatch", case_callgraph_dispatch),
    ("callgraph-dispatch-pg", case_callgraph_dispatch_pg),
    ("callgraph-coro", case_callgraph_coro),
    ("callgraph-exit", case_callgraph_exit),
    ("callgraph-exit-pg", case_callgraph_exit_pg),
    ("callgraph-coro-pg", case_callgraph_coro_pg),
    ("callgraph-o2-pg", case_callgraph_o2_pg),
    ("callgraph-filter", case_callgraph_filter),
    ("callgraph-exception", case_callgraph_exception),
    ("callgraph-exception-pg", case_callgraph_exception_pg),
    ("callgraph-errors", case_callgraph_errors),
    ("callgraph-exports", case_callgraph_exports),
    ("callgraph-signal", case_callgraph_signal),
    ("callgraph-signal-pg", case_callgraph_signal_pg),
    ("callgraph-deep", case_callgraph_deep),
    ("callgraph-deep-pg", case_callgraph_deep_pg),
    ("callgraph-ui", case_callgraph_ui),
]
