"""Integration case for the production mode, `memviz run --sample SIZE`,
on sampler: 400,000 blocks of 64 bytes, 100,000 of 200 and 4,000 of
5,000 kept (25.6, 20 and 20 MB), 1,000,000 blocks of 100 bytes allocated
and freed.

  sample-estimates  with a fixed seed (MEMVIZ_SAMPLE_SEED=1) and one
                    allocation sampled every 16 KiB: each kept site's live
                    bytes at exit within 10% of the truth (five seeds gave
                    at most 4% off), the churn site's allocations within
                    10% and nothing of it left, the errors given, the trace
                    a small part of the full one's size, no heap snapshot;
                    a bad --sample is a usage error
  sample-children   forkexec under --sample 1k: the forked child's trace
                    and the exec'd one's are sampled at the parent's rate;
                    the forked child's leaks exact (its blocks are above
                    the rate, so all recorded)
"""
import json
import os

import run_tests as rt

KEPT = {"keep_small": 25600000, "keep_medium": 20000000, "keep_large": 20000000}


def case_estimates(env, workroot):
    case = rt.Case("sample-estimates", workroot)
    trace = os.path.join(case.dir, "sampled.mvz")
    full = os.path.join(case.dir, "full.mvz")
    run_env = dict(os.environ, MEMVIZ_SAMPLE_SEED="1")
    rc, out, err, _ = rt.run([env.memviz, "run", "--sample", "16k", "-o", trace, "--",
                              env.prog("sampler")], cwd=case.dir, env=run_env)
    case.check("memviz run --sample 16k: exit 0, says the numbers are estimates",
               rc == 0 and b"these are estimates" in err, rt.tail(err))
    rc2, _, _, _ = rt.run([env.memviz, "run", "-o", full, "--", env.prog("sampler")],
                          cwd=case.dir)
    if rc != 0 or rc2 != 0:
        return case
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", "--all-sites", trace])
    doc = json.loads(out.decode()) if rc == 0 else {}
    got = {}
    for s in doc.get("sites") or []:
        names = [f.get("function") for f in s.get("frames") or []][:2]
        for k in list(KEPT) + ["churn"]:
            if k in names:
                got[k] = s
    for k, want in KEPT.items():
        est = (got.get(k) or {}).get("leaked_bytes") or 0
        case.check("%s: live bytes at exit %d, within 10%% of %d" % (k, est, want),
                   abs(est - want) <= 0.10 * want, "")
    churn = got.get("churn") or {}
    case.check("churn: 1,000,000 allocations estimated within 10%%, none left (%s)"
               % churn.get("allocations"),
               abs((churn.get("allocations") or 0) - 1000000) <= 100000
               and churn.get("leaked_bytes") == 0, repr(churn)[:200])
    samp = doc.get("sampling") or {}
    case.check("the report says it is sampled, with the estimates' errors",
               samp.get("mean_bytes") == 16384 and samp.get("leaked_bytes_error_95", 0) > 0
               and samp.get("allocated_bytes_error_95", 0) > 0, repr(samp))
    rc, out, err, _ = rt.run([env.memviz, "report", trace])
    case.check("text: the 'sampled:' line", b"sampled:          one allocation every 16.00 KiB"
               in out, rt.tail(out))
    case.check("the sampled trace is under 5%% of the full one (%d vs %d bytes)"
               % (os.path.getsize(trace), os.path.getsize(full)),
               os.path.getsize(trace) * 20 < os.path.getsize(full), "")
    rc, out, err, _ = rt.run([env.memviz, "export", "--format", "speedscope", trace])
    case.check("speedscope: the profiles say they are estimates",
               rc == 0 and b"(estimates: sampled)" in out, rt.tail(err))
    rc, out, err, _ = rt.run([env.memviz, "leaks", trace])
    case.check("no heap snapshot in the sampled mode", rc == 1 and b"no heap snapshot" in err,
               repr(err))
    rc, out, err, _ = rt.run([env.memviz, "run", "--sample", "lots", "--", "true"])
    case.check("--sample lots: usage error", rc == 2 and b"--sample needs a size" in err,
               repr(err))
    return case


def case_children(env, workroot):
    case = rt.Case("sample-children", workroot)
    trace = os.path.join(case.dir, "fe.mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "--sample", "1k", "-o", trace, "--",
                              env.prog("forkexec"), env.prog("churn")], cwd=case.dir)
    case.eq("memviz run --sample 1k -- forkexec: exit 0", 0, rc)
    rc, out, err, _ = rt.run([env.memviz, "report", "--json", trace])
    doc = json.loads(out.decode()) if rc == 0 else {}
    kids = doc.get("children") or []
    case.eq("two forked children (one of them execs churn)", ["fork", "fork"],
            [k.get("how") for k in kids])
    seen = []
    for k in kids:
        path = rt.resolve_trace(k.get("trace"), trace, case.dir)
        rc, out, err, _ = rt.run([env.memviz, "report", "--json", path])
        kid = json.loads(out.decode()) if rc == 0 else {}
        case.eq("a forked child's trace is sampled at the parent's rate", 1024,
                (kid.get("sampling") or {}).get("mean_bytes"))
        grand = kid.get("children") or []
        if not grand:  # child_work
            summ = kid.get("summary") or {}
            case.eq("the forked child's leaks: its 3 blocks of 2,222 bytes, each above the "
                    "rate and so recorded, exactly", [6666, 3],
                    [summ.get("leaked_bytes"), summ.get("leaked_blocks")])
            seen.append("fork")
            continue
        path = rt.resolve_trace(grand[0].get("trace"), path, case.dir)
        rc, out, err, _ = rt.run([env.memviz, "report", "--json", path])
        churn = json.loads(out.decode()) if rc == 0 else {}
        case.eq("the exec'd churn's trace too", 1024, (churn.get("sampling") or {}).get("mean_bytes"))
        seen.append("exec")
    case.eq("both children checked", ["exec", "fork"], sorted(seen))
    return case


CASES = [
    ("sample-estimates", case_estimates),
    ("sample-children", case_children),
]
