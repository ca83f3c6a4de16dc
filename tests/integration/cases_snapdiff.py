"""Integration cases for comparing heap snapshots (`memviz diff --snapshots`),
on grower, whose heap changes in known steps: 25 kept blocks of 100 bytes a
round (held by the global `kept`), a flat cache of 10 blocks of 200 bytes
(one replaced a round), one lost block of 77 bytes a round.

  snapshot-diff        one run: the first periodic snapshot against the
                       exit's: live bytes per site, new and freed blocks
                       that add up to the change, the kept array's root
                       retaining what the grower added; two runs (20 and 40
                       rounds): the exit snapshots matched by site and root,
                       no new/freed (no identity across runs); bad input
"""
import json

import run_tests as rt


def diff_json(case, env, args, what):
    rc, out, err, _ = rt.run([env.memviz, "diff", "--snapshots", "--json", "--top", "100"] + args)
    if not case.check("%s: exits 0" % what, rc == 0, "%s %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    try:
        return json.loads(out.decode())
    except ValueError:
        case.check("%s: JSON parses" % what, False, rt.tail(out))
        return None


def site(doc, func):
    return next((s for s in doc.get("sites") or []
                 if any(f.get("function") == func for f in s.get("frames") or [])), {})


def root(doc, name):
    return next((r for r in doc.get("roots") or [] if r.get("name") == name), {})


def one_run(case, env, trace):
    doc = diff_json(case, env, ["--base-snapshot", "every-1", "--new-snapshot", "exit", trace],
                    "every-1 -> exit")
    if doc is None:
        return
    case.eq("one run: same_run, the names asked for", [True, "every-1", "exit"],
            [doc.get("same_run"), (doc.get("base") or {}).get("snapshot"),
             (doc.get("new") or {}).get("snapshot")])
    grow = site(doc, "grow")
    before = (grow.get("live_blocks") or [0])[0]
    case.check("grow: 25 blocks a round at every-1, 1,000 at exit",
               before % 25 == 0 and 0 < before < 1000
               and grow.get("live_blocks") == [before, 1000]
               and grow.get("live_bytes") == [100 * before, 100000], repr(grow)[:300])
    case.eq("grow: every added block is new, none freed",
            [100 * (1000 - before), 1000 - before, 0, 0],
            [grow.get("new_bytes"), grow.get("new_blocks"), grow.get("freed_bytes"),
             grow.get("freed_blocks")])
    cache = site(doc, "churn_cache")
    lb = cache.get("live_blocks") or [0, 0]
    case.check("the cache (its entries replaced since main's): 10 at exit; new minus freed "
               "is the change, more new than that (it churns)",
               lb[1] == 10 and cache.get("new_blocks", 0) - cache.get("freed_blocks", 0)
               == lb[1] - lb[0] and cache.get("freed_blocks", 0) > 0
               and cache.get("new_bytes") == 200 * cache.get("new_blocks", 0), repr(cache)[:300])
    sites = doc.get("sites") or []
    change = doc["new"]["live_bytes"] - doc["base"]["live_bytes"]
    case.eq("new minus freed bytes over every site is the change of the live heap", change,
            sum(s.get("new_bytes", 0) - s.get("freed_bytes", 0) for s in sites))
    case.eq("each site's live change is its new minus its freed",
            [], [s["frames"][0] for s in sites
                 if s["live_bytes"][1] - s["live_bytes"][0] != s["new_bytes"] - s["freed_bytes"]])
    kept = root(doc, "global kept [grower]")
    case.eq("the root `kept` retains its array (8,000 bytes) and the kept blocks",
            [8000 + 100 * before, 8000 + 100000], kept.get("retained_bytes"))
    case.eq("sites rank by change of live bytes: grow first", grow, sites[0] if sites else None)
    rc, out, err, _ = rt.run([env.memviz, "diff", "--snapshots", trace])
    head = out.split(b"Allocation sites")[-1].split(b"#2")[0]
    case.check("text, the last two snapshots: header, kept's root, grow first",
               rc == 0 and b'new:  "exit"' in out and b"global kept [grower]" in out
               and b"grow  tests/programs/grower.c" in head, rt.tail(out))


def two_runs(case, env, short, long_):
    doc = diff_json(case, env, [short, long_], "20 rounds -> 40 rounds")
    if doc is None:
        return
    grow, cache = site(doc, "grow"), site(doc, "churn_cache")
    case.eq("two runs: not the same run; exit snapshots", [False, "exit", "exit"],
            [doc.get("same_run"), (doc.get("base") or {}).get("snapshot"),
             (doc.get("new") or {}).get("snapshot")])
    case.eq("grow: 500 blocks, then 1,000", [[500, 1000], [50000, 100000]],
            [grow.get("live_blocks"), grow.get("live_bytes")])
    case.check("no new or freed across runs", "new_blocks" not in grow, repr(grow)[:200])
    case.check("the cache does not change, and is not listed", not cache, repr(cache)[:200])
    case.eq("kept retains 4,000 + 50,000, then 8,000 + 100,000 bytes", [54000, 108000],
            root(doc, "global kept [grower]").get("retained_bytes"))


def bad_input(case, env, trace):
    for args, want in (([trace, trace, trace], b"one trace file or two"),
                       (["--sort", "peak", trace], b"--sort is for runs"),
                       (["--base-snapshot", "nope", trace], b"no complete snapshot named 'nope'")):
        rc, out, err, _ = rt.run([env.memviz, "diff", "--snapshots"] + args)
        case.check("diff --snapshots %s: one line, non-zero" % " ".join(args[:2]),
                   rc in (1, 2) and want in err and len(err.splitlines()) <= 2, "%s %r" % (rc, err))


def case_snapshot_diff(env, workroot):
    case = rt.Case("snapshot-diff", workroot)
    trace = rt.memviz_run(case, env, "grower", args=["40"], opts=["--snapshot-every", "200ms"],
                          stdout=b"grower: 0 SIGUSR1\n")
    short = rt.memviz_run(case, env, "grower", args=["20"], stdout=b"grower: 0 SIGUSR1\n",
                          trace_name="grower20")
    if trace:
        one_run(case, env, trace)
        bad_input(case, env, trace)
    if trace and short:
        two_runs(case, env, short, trace)
    return case


CASES = [
    ("snapshot-diff", case_snapshot_diff),
]
