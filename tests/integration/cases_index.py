"""A trace's index (`memviz index`, src/analysis/index.h): `memviz ui`
opened from it answers every query exactly as it does after replaying
the trace; a stale, damaged or foreign index is never taken (a damaged
one is said so, in one line), and the answers stay the same."""
import os
import shutil
import time

import run_tests as rt
from cases_ui import traced, http_status, start_ui, stop_ui

COSTS = ("peak", "leaked", "allocations", "bytes", "temporary")
QUERIES = (["/api/summary", "/api/breakdown", "/api/timeline", "/api/snapshots", "/api/snapshot",
            "/api/lifetimes", "/api/series?by=function&top=5", "/api/function?name=phase_b",
            "/api/series?by=site&top=3&rank=average",
            "/api/series?by=module&top=2&rank=at&t_ns=700000000",
            "/api/summary?from_ns=300000000&to_ns=900000000"] +
           ["/api/flame?cost=%s&direction=%s" % (c, d) for c in COSTS
            for d in ("top-down", "bottom-up")] +
           ["/api/sites?cost=%s&top=50" % c for c in COSTS])


def answers(case, env, trace, label):
    """{query: body} from `memviz ui` on trace (the summaries without their
    from_index), and what it said on stderr; None when it did not start."""
    p, url = start_ui(case, env.asan or env.memviz, trace)
    if not case.check("%s: memviz ui prints its address" % label, url, ""):
        p.kill()
        return None, None, None
    got, indexed = {}, None
    try:
        for q in QUERIES:
            status, body = http_status(url.rstrip("/") + q)
            if q == "/api/summary":
                indexed = b'"from_index":true' in body
            got[q] = (status, body.replace(b'"from_index":true', b'"from_index":false'))
    finally:
        stop_ui(case, p, label)
    with open(os.path.join(case.dir, "ui.err"), "rb") as f:
        return got, indexed, f.read()


def same_answers(case, label, want, got):
    differ = [q for q in QUERIES if want.get(q) != got.get(q)]
    case.eq("%s: every query answered as after a replay" % label, [], differ)
    case.check("%s: and those answers are 200s" % label,
               all(want[q][0] == 200 for q in QUERIES), repr([(q, want[q][0]) for q in QUERIES]))


def case_index(env, workroot):
    case = rt.Case("index", workroot)
    trace = traced(case, env, "phases")
    if not trace:
        return case
    want, indexed, _ = answers(case, env, trace, "no index")
    if want is None:
        return case
    case.eq("no index: the summary says it replayed", False, indexed)
    index = trace + "i"
    rc, out, err, _ = rt.run([env.memviz, "index", trace])
    case.check("memviz index exits 0 and names the index", rc == 0 and index.encode() in out,
               "%s; %s" % (rt.rc_str(rc), rt.tail(err)))
    case.check("the index is small (its size goes with the sites, not the events)",
               os.path.isfile(index) and os.path.getsize(index) < 64 << 10,
               "%s bytes" % (os.path.getsize(index) if os.path.isfile(index) else None))
    got, indexed, _ = answers(case, env, trace, "indexed")
    if got is None:
        return case
    case.eq("indexed: the summary says it came from the index", True, indexed)
    same_answers(case, "indexed", want, got)
    check_not_taken(case, env, trace, want)
    return case


def check_not_taken(case, env, trace, want):
    index = trace + "i"
    good = os.path.join(case.dir, "good.mvzi")
    shutil.copy(index, good)
    # stale: the trace changed since (its modification time)
    later = time.time() + 5
    os.utime(trace, (later, later))
    got, indexed, err = answers(case, env, trace, "stale")
    if got is not None:
        case.eq("stale: not taken", False, indexed)
        case.eq("stale: nothing said", b"", err.strip())
        same_answers(case, "stale", want, got)
    rt.run([env.memviz, "index", trace])
    shutil.copy(index, good)
    # damaged: cut in half
    with open(good, "rb") as f:
        data = f.read()
    with open(index, "wb") as f:
        f.write(data[:len(data) // 2])
    got, indexed, err = answers(case, env, trace, "cut")
    if got is not None:
        case.eq("cut: not taken", False, indexed)
        case.check("cut: one line says the index is damaged",
                   err.count(b"\n") == 1 and b"damaged index" in err, repr(err))
        same_answers(case, "cut", want, got)
    # not an index at all
    with open(index, "wb") as f:
        f.write(b"not an index at all\n" * 10)
    got, indexed, err = answers(case, env, trace, "garbage")
    if got is not None:
        case.eq("garbage: not taken", False, indexed)
        case.check("garbage: one line says so", err.count(b"\n") == 1, repr(err))
        same_answers(case, "garbage", want, got)
    os.unlink(index)


def case_index_errors(env, workroot):
    case = rt.Case("index-errors", workroot)
    for argv, want in ((["index"], 2), (["index", "--bogus", "x.mvz"], 2),
                       (["index", os.path.join(case.dir, "missing.mvz")], 1)):
        rc, out, err, _ = rt.run([env.memviz] + argv)
        case.check("memviz %s: exit %d with one line" % (" ".join(argv[1:]), want),
                   rc == want and err.strip() and b"Traceback" not in err, "%s; %s" % (
                       rt.rc_str(rc), rt.tail(err)))
    trace = traced(case, env, "churn")
    if not trace:
        return case
    killed = os.path.join(case.dir, "killed.mvz")
    rt.run([env.memviz, "run", "-o", killed, env.prog("sigkill")])
    rc, out, err, _ = rt.run([env.memviz, "index", killed])
    case.check("a trace without its end (SIGKILL): exit 1, one line saying so, no index",
               rc == 1 and err.count(b"\n") == 1 and b"no end" in err and
               not os.path.exists(killed + "i"), "%s; %s" % (rt.rc_str(rc), rt.tail(err)))
    os.mkdir(trace + "i")  # where the index would go
    rc, out, err, _ = rt.run([env.memviz, "index", trace])
    case.check("an index that cannot be written: exit 1 with one line",
               rc == 1 and err.count(b"\n") == 1, "%s; %s" % (rt.rc_str(rc), rt.tail(err)))
    case.eq("and no file left behind", ["churn.mvz", "churn.mvzi"], sorted(
        f for f in os.listdir(case.dir) if f.startswith("churn")))
    return case


def indexed_open(case, env, trace, label, extra_env=None):
    """Whether `memviz ui` on trace opened from an index."""
    old = dict(os.environ)
    os.environ.update(extra_env or {})
    try:
        p, url = start_ui(case, env.asan or env.memviz, trace)
    finally:
        os.environ.clear()
        os.environ.update(old)
    if not case.check("%s: memviz ui prints its address" % label, url, ""):
        p.kill()
        return None
    try:
        status, body = http_status(url.rstrip("/") + "/api/summary")
    finally:
        stop_ui(case, p, label)
    return status == 200 and b'"from_index":true' in body


def case_index_auto(env, workroot):
    """A large trace is indexed at the end of memviz run and at its first
    open (the size made small with MEMVIZ_INDEX_FROM)."""
    case = rt.Case("index-auto", workroot)
    small = dict(os.environ, MEMVIZ_INDEX_FROM="1")
    plain = os.path.join(case.dir, "plain.mvz")
    rc, _, err, _ = rt.run([env.memviz, "run", "-o", plain, env.prog("churn")])
    case.check("a small trace: memviz run writes no index",
               rc == 0 and not os.path.exists(plain + "i") and b"indexing the" not in err, rt.tail(err))
    ran = os.path.join(case.dir, "ran.mvz")
    rc, _, err, _ = rt.run([env.memviz, "run", "-o", ran, env.prog("churn")], env=small)
    case.check("a large one: memviz run says it indexes it, and where the index went",
               rc == 0 and os.path.isfile(ran + "i") and b"indexing the" in err and
               (ran + "i").encode() in err, rt.tail(err))
    case.eq("memviz ui then opens it from the index", True, indexed_open(case, env, ran, "ran"))
    skipped = os.path.join(case.dir, "skipped.mvz")
    rc, _, err, _ = rt.run([env.memviz, "run", "--no-index", "-o", skipped, env.prog("churn")],
                           env=small)
    case.check("--no-index: none", rc == 0 and not os.path.exists(skipped + "i"), rt.tail(err))
    case.eq("memviz ui's first open of a large trace replays", False,
            indexed_open(case, env, skipped, "first", {"MEMVIZ_INDEX_FROM": "1"}))
    case.check("and leaves an index", os.path.isfile(skipped + "i"), "")
    case.eq("the second opens from it", True, indexed_open(case, env, skipped, "second"))
    return case


CASES = [
    ("index", case_index),
    ("index-auto", case_index_auto),
    ("index-errors", case_index_errors),
]
