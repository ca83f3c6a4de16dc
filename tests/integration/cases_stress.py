"""Stress case: tests/programs/mt64, 64 threads churning allocations for a
minute, under `memviz run`; the report must account for every block exactly.

mt64 counts what each of its threads did (allocations, frees, bytes,
temporary allocations by docs/METRICS.md's definition, leaks) and prints it
per thread (with the thread's kernel tid) and per allocating function; see
the comment at the top of mt64.c. Those printed numbers are the
expectations: the report's "thread_list" entry of each worker's tid and the
sites whose innermost frame is each function must match them exactly, and
the trace must have no damage (nothing lost, missing or out of order).

The checks are in check_mt64() so that tests/tsan/run_tsan.py can apply
them to a run under the ThreadSanitizer build of the agent.
"""

import os
import re

import run_tests as rt

MT64_SECONDS = 60
MT64_THREADS = 64
# The program's defaults: bursts of 8 iterations, 2 ms pauses, a storm of
# 4,096 iterations every 1,024 bursts: about 28 M allocations in a minute.
MT64_ARGS = [str(MT64_SECONDS), str(MT64_THREADS)]

MT64_FUNCTIONS = ("window_alloc", "temp_alloc", "leak_blocks")
COUNT_KEYS = ("allocations", "frees", "bytes", "temporary", "leaked_bytes", "leaked_blocks")

_THREAD_RE = re.compile(r"^mt64 thread (\d+) tid (\d+) " + " ".join(r"%s (\d+)" % k for k in COUNT_KEYS) + "$")
_FUNC_RE = re.compile(r"^mt64 function (\w+) allocations (\d+) bytes (\d+) temporary (\d+) "
                      r"leaked_bytes (\d+) leaked_blocks (\d+)$")
_TOTAL_RE = re.compile(r"^mt64 total " + " ".join(r"%s (\d+)" % k for k in COUNT_KEYS) + "$")


def parse_mt64(stdout):
    """mt64's stdout -> {"threads": {k: {tid, counts...}}, "functions": {...},
    "total": {...}}, or None when a line does not parse."""
    threads, funcs, total = {}, {}, None
    for line in stdout.decode("utf-8", "replace").splitlines():
        m = _THREAD_RE.match(line)
        if m:
            v = [int(x) for x in m.groups()]
            threads[v[0]] = dict(zip(("tid",) + COUNT_KEYS, v[1:]))
            continue
        m = _FUNC_RE.match(line)
        if m:
            v = [int(x) for x in m.groups()[1:]]
            funcs[m.group(1)] = dict(zip(("allocations", "bytes", "temporary", "leaked_bytes",
                                          "leaked_blocks"), v))
            continue
        m = _TOTAL_RE.match(line)
        if m:
            total = dict(zip(COUNT_KEYS, [int(x) for x in m.groups()]))
            continue
        return None
    return {"threads": threads, "functions": funcs, "total": total}


def check_mt64(case, rep, out, label, nthreads):
    """Checks report rep against mt64's printed numbers (stdout bytes out)."""
    p = parse_mt64(out)
    if not case.check("%s: stdout is %d thread lines, 3 function lines and a total" % (label, nthreads),
                      p is not None and sorted(p["threads"]) == list(range(nthreads))
                      and sorted(p["functions"]) == sorted(MT64_FUNCTIONS) and p["total"] is not None,
                      "stdout: %s" % rt.tail(out, 400)):
        return
    # The program's own sums are consistent (a check of the parsing, too).
    for key in COUNT_KEYS:
        case.eq("%s: printed total %s == sum of printed threads" % (label, key), p["total"][key],
                sum(t[key] for t in p["threads"].values()))
    for key in ("allocations", "bytes", "temporary", "leaked_bytes", "leaked_blocks"):
        case.eq("%s: printed total %s == sum of printed functions" % (label, key), p["total"][key],
                sum(f[key] for f in p["functions"].values()))
    case.check("%s: every thread churned (allocations > 1,000 each)" % label,
               all(t["allocations"] > 1000 for t in p["threads"].values()),
               "fewest: %d" % min(t["allocations"] for t in p["threads"].values()))

    # Per thread, by kernel tid.
    tl = rep.get("thread_list")
    if not case.check("%s: report has a thread_list" % label, isinstance(tl, list), repr(tl)[:200]):
        return
    by_tid = {}
    for t in tl:
        by_tid.setdefault(t.get("tid"), []).append(t)
    dup = [tid for tid, v in by_tid.items() if len(v) > 1]
    case.check("%s: thread_list has each tid once" % label, not dup, "repeated tids: %s" % dup[:10])
    report_keys = {"allocations": "allocations", "frees": "frees", "bytes": "allocated_bytes",
                   "temporary": "temporary", "leaked_bytes": "leaked_bytes",
                   "leaked_blocks": "leaked_blocks"}
    mism = []
    for k, t in sorted(p["threads"].items()):
        got = (by_tid.get(t["tid"]) or [None])[0]
        if got is None:
            mism.append("thread %d (tid %d) missing" % (k, t["tid"]))
            continue
        for key, rkey in report_keys.items():
            if got.get(rkey) != t[key]:
                mism.append("thread %d (tid %d) %s: printed %d, report %r" % (k, t["tid"], key, t[key],
                                                                            got.get(rkey)))
    case.check("%s: thread_list matches every thread's printed allocations, frees, bytes, temporary "
               "and leaks exactly (%d threads)" % (label, nthreads), not mism,
               "%d mismatches: %s" % (len(mism), "; ".join(mism[:8])))
    others = [t for t in tl if t.get("tid") not in {w["tid"] for w in p["threads"].values()}]
    pid = (rep.get("process") or {}).get("pid")
    case.eq("%s: the only other thread in thread_list is main (tid = pid)" % label, [pid],
            [t.get("tid") for t in others])
    case.eq("%s: summary.threads" % label, nthreads + 1, (rep.get("summary") or {}).get("threads"))

    # Per function (sites whose innermost frame is the function).
    callers = {"window_alloc": ["worker_main"], "temp_alloc": ["worker_main"],
               "leak_blocks": ["worker_main"]}
    funcs = {}
    for name, f in p["functions"].items():
        funcs[name] = dict(allocations=f["allocations"], allocated_bytes=f["bytes"],
                           temporary=f["temporary"], leaked_bytes=f["leaked_bytes"],
                           leaked_blocks=f["leaked_blocks"], file="mt64.c", module="/mt64",
                           caller=callers[name])
    funcs["temp_alloc"]["entries"] = {"malloc": p["functions"]["temp_alloc"]["allocations"]}
    funcs["leak_blocks"]["entries"] = {"malloc": p["functions"]["leak_blocks"]["allocations"]}
    for name in ("free_slot", "free_window", "worker_main", "main"):
        funcs[name] = dict(allocations=0)
    rt.check_functions(case, rep, label, funcs)
    win = rt.select_sites(rep, "window_alloc")
    ent = {}
    for s in win:
        for k, v in (s.get("entries") or {}).items():
            ent[k] = ent.get(k, 0) + v
    case.check("%s: window_alloc's entries are malloc and calloc only, both used" % label,
               set(ent) == {"malloc", "calloc"}, "entries %r" % ent)

    # Everything not from mt64's functions is main's (glibc's pthread_create).
    summ = rep.get("summary") or {}
    main_t = others[0] if len(others) == 1 else {}
    for key, rkey in (("allocations", "allocations"), ("frees", "frees"), ("bytes", "allocated_bytes"),
                      ("leaked_bytes", "leaked_bytes"), ("leaked_blocks", "leaked_blocks")):
        case.eq("%s: summary.%s == printed total + main thread's" % (label, rkey),
                p["total"][key] + main_t.get(rkey, 0), summ.get(rkey))
    # (glibc frees the TLS vectors of thread stacks it does not cache.)
    case.check("%s: main thread made a few allocations and frees (glibc's, <= 2 per thread)" % label,
               main_t and main_t.get("allocations", 0) <= 2 * nthreads + 10
               and main_t.get("frees", 0) <= main_t.get("allocations", 0),
               "main: %r" % main_t)


def run_mt64(case, env, args, timeout, environ=None, opts=()):
    """memviz run of mt64; returns (trace path or None, stdout)."""
    trace = os.path.join(case.dir, "mt64.mvz")
    cmd = [env.memviz, "run", "-o", trace] + list(opts) + ["--", env.prog("mt64")] + list(args)
    rc, out, err, secs = rt.run(cmd, cwd=case.dir, timeout=timeout, env=environ)
    case.eq("run exit code", 0, rc)
    mv, prog_err = rt.split_stderr(err)
    case.eq("program stderr passes through (none)", [], prog_err)
    case.check("memviz prints a summary on stderr", mv, "stderr: " + rt.tail(err))
    case.check("trace file written", os.path.isfile(trace) and os.path.getsize(trace) > 0, trace)
    return (trace if rc == 0 and os.path.isfile(trace) else None), out, secs


def case_mt64(env, workroot):
    """64 threads x 60 s of malloc/calloc/free churn, some storms overflowing
    the agent's per-thread buffers, some leaks: exact per thread and per
    function, no damage."""
    case = rt.Case("stress-mt64", workroot)
    trace, out, secs = run_mt64(case, env, MT64_ARGS, timeout=MT64_SECONDS + 240)
    case.eq("run took about %d s" % MT64_SECONDS, (MT64_SECONDS, MT64_SECONDS + 120), round(secs))
    if trace:
        rep = rt.report_json(case, env, trace, "mt64")
        if rep is not None:
            rt.check_process(case, rep, "mt64", exe="mt64", argv=[env.prog("mt64")] + MT64_ARGS,
                             status=0, how="return")
            case.eq("mt64: duration_ns >= %d s" % MT64_SECONDS, (MT64_SECONDS * 10**9, None),
                    (rep.get("summary") or {}).get("duration_ns"))
            check_mt64(case, rep, out, "mt64", MT64_THREADS)
    return case


CASES = [
    ("stress-mt64", case_mt64),
]
