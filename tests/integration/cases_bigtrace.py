"""A trace larger than 4 GiB is written and read back completely.

tests/programs/bigtrace_gen writes, with the trace library's own chunk
writer, a synthetic trace of PAD_CHUNKS incompressible padding chunks of
almost 64 MiB each (a record kind readers do not know, so they skip it) with
1,000 temporary allocations after each, framed by an early phase before the
padding and a late phase after it - past the 4 GiB mark - that makes the
peak, leaks, and frees blocks allocated before the mark (see the comment at
the top of bigtrace_gen.c). Every number of the report follows from that
layout and PAD_CHUNKS, as derived in expected() below; a reader that lost
or misplaced anything past 4 GiB (a 32-bit offset or length) gets the peak,
the leaks, the frees or the counts wrong.

Then one byte of the last padding chunk (past 4 GiB too) is flipped: the
report must skip exactly that chunk (its length in skipped_bytes, a 64-bit
count) and still give every number.

The file (about 4.2 GiB) is deleted at the end, passed or failed. The case
takes about 30 s, most of it writing the file.
"""

import json
import os
import re

import run_tests as rt

PAD_CHUNKS = 66  # x (64 MiB - 4 KiB) = 4.12 GiB of padding
GiB = 1 << 30
MiB = 1 << 20


def expected(m):
    """The report of a bigtrace_gen trace with m padding chunks (derived from
    the layout in bigtrace_gen.c)."""
    events_before_late = 1000 + 2 * 1000 + m * 2 * 1000  # early_keep, early_temp pairs, middle pairs
    late_events = 16 + 8 + 7 + 400
    funcs = {
        # 1,000 x malloc(1000) kept until the late phase frees the first 400
        "early_keep": dict(allocations=1000, allocated_bytes=1000 * 1000, leaked_bytes=600 * 1000,
                           leaked_blocks=600, temporary=0, peak_bytes=1000 * 1000,
                           at_peak_bytes=1000 * 1000, entries={"malloc": 1000}),
        # 1,000 x calloc(8, 8) freed at once
        "early_temp": dict(allocations=1000, allocated_bytes=64 * 1000, leaked_bytes=0, leaked_blocks=0,
                           temporary=1000, peak_bytes=64, at_peak_bytes=0, entries={"calloc": 1000}),
        # m x 1,000 x malloc(100) freed at once
        "middle_churn": dict(allocations=1000 * m, allocated_bytes=100 * 1000 * m, leaked_bytes=0,
                             leaked_blocks=0, temporary=1000 * m, peak_bytes=100 if m else 0,
                             at_peak_bytes=0, entries={"malloc": 1000 * m}),
        # 16 x 1 MiB, all live at the peak, the first 8 freed
        "late_peak": dict(allocations=16, allocated_bytes=16 * MiB, leaked_bytes=8 * MiB, leaked_blocks=8,
                          temporary=0, peak_bytes=16 * MiB, at_peak_bytes=16 * MiB,
                          entries={"malloc": 16}),
        # 7 x 4,321 kept, allocated after the peak
        "late_leak": dict(allocations=7, allocated_bytes=7 * 4321, leaked_bytes=7 * 4321, leaked_blocks=7,
                          temporary=0, peak_bytes=7 * 4321, at_peak_bytes=0, entries={"malloc": 7}),
    }
    for spec in funcs.values():
        spec.update(file="bigtrace_gen.c", module="/bigtrace_gen", caller=["main"])
    summary = {
        "allocations": sum(f["allocations"] for f in funcs.values()),
        "frees": 1000 + 1000 * m + 8 + 400,
        "allocated_bytes": sum(f["allocated_bytes"] for f in funcs.values()),
        "peak_bytes": 1000 * 1000 + 16 * MiB,  # at the 16th late_peak block
        # event n is at n us: the 16th late_peak allocation is event
        # events_before_late + 15
        "peak_time_ns": (events_before_late + 15) * 1000,
        "leaked_bytes": 600 * 1000 + 8 * MiB + 7 * 4321,
        "leaked_blocks": 600 + 8 + 7,
        "temporary": 1000 + 1000 * m,
        "threads": 1,
        "unmatched_frees": 0,
        "mismatched_frees": 0,
        "duration_ns": (events_before_late + late_events) * 1000,  # EXIT/END 1 us after the last
    }
    return summary, funcs, events_before_late + late_events


_OUT_RE = re.compile(r"^bigtrace: chunks (\d+) events (\d+) pad_offset (\d+) pad_len (\d+) "
                     r"late_offset (\d+) size (\d+)$")


def case_bigtrace(env, workroot):
    case = rt.Case("bigtrace-4gib", workroot)
    trace = os.path.join(case.dir, "big.mvz")
    st = os.statvfs(case.dir)
    free = st.f_bavail * st.f_frsize
    if not case.check("at least 6 GiB free in the work directory for a 4.2 GiB trace", free >= 6 * GiB,
                      "%.1f GiB free in %s" % (free / GiB, case.dir)):
        return case
    try:
        check_bigtrace(case, env, trace)
    finally:
        if os.path.exists(trace):
            os.remove(trace)
    case.check("the >4 GiB trace was deleted", not os.path.exists(trace), trace)
    return case


def check_bigtrace(case, env, trace):
    rc, out, err, secs = rt.run([env.prog("bigtrace_gen"), trace, str(PAD_CHUNKS)], cwd=case.dir,
                                timeout=600)
    if not case.check("bigtrace_gen exits 0", rc == 0, "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(err))):
        return
    m = _OUT_RE.match(out.decode("utf-8", "replace").strip())
    if not case.check("bigtrace_gen says where it wrote what", m, "stdout: %s" % rt.tail(out)):
        return
    chunks, events, pad_offset, pad_len, late_offset, size = (int(x) for x in m.groups())
    summary, funcs, nevents = expected(PAD_CHUNKS)
    case.eq("file size (as written) is over 4 GiB", (4 * GiB + 1, None), size)
    case.eq("file size on disk == reported size", size, os.path.getsize(trace))
    case.eq("the late phase starts past 4 GiB", (4 * GiB + 1, None), late_offset)
    case.eq("the last padding chunk lies past 4 GiB, before the late phase", True,
            4 * GiB < pad_offset and pad_offset + pad_len <= late_offset)
    case.eq("events written", nevents, events)
    case.eq("chunks written (early, 2 per padding chunk, late)", 2 + 2 * PAD_CHUNKS, chunks)

    rep = rt.report_json(case, env, trace, "big")  # also checks: no damage, ASan build identical
    if rep is None:
        return
    rt.check_process(case, rep, "big", exe="bigtrace_gen", status=0, how="return")
    case.eq("big: process.complete", True, (rep.get("process") or {}).get("complete"))
    rt.check_summary(case, rep, "big", summary)
    rt.check_functions(case, rep, "big", funcs)
    case.eq("big: thread_list", [{"tid": 4243, "name": "bigtrace", "allocations": summary["allocations"],
                                  "allocated_bytes": summary["allocated_bytes"], "frees": summary["frees"],
                                  "temporary": summary["temporary"], "at_peak_bytes": summary["peak_bytes"],
                                  "leaked_bytes": summary["leaked_bytes"],
                                  "leaked_blocks": summary["leaked_blocks"]}],
            rep.get("thread_list"))

    # Damage past 4 GiB: one flipped byte in the last padding chunk.
    with open(trace, "r+b") as f:
        f.seek(pad_offset + pad_len // 2)
        b = f.read(1)
        f.seek(pad_offset + pad_len // 2)
        f.write(bytes([b[0] ^ 0x40]))
    builds = [("", env.memviz)] + ([("asan ", env.asan)] if env.asan else [])
    for label, binary in builds:
        rc, dout, derr, _ = rt.run([binary, "report", "--json", "--all-sites", trace], timeout=rt.REPORT_TIMEOUT)
        complaint = rt.sanitizer_complaint(derr) if label else None
        if not case.check("damaged: %sreport --json exits 0, clean" % label, rc == 0 and not complaint,
                          "%s; stderr: %s" % (rt.rc_str(rc), rt.tail(derr))):
            continue
        try:
            drep = json.loads(dout.decode("utf-8"))
        except ValueError as e:
            case.check("damaged: %sreport --json is JSON" % label, False, str(e))
            continue
        dmg = drep.get("damage") or {}
        case.eq("damaged: %sexactly the flipped chunk is skipped (bad_chunks, skipped_bytes, truncated)"
                % label, {"bad_chunks": 1, "skipped_bytes": pad_len, "truncated": False},
                {k: dmg.get(k) for k in ("bad_chunks", "skipped_bytes", "truncated")})
        case.eq("damaged: %sno other damage" % label, {},
                {k: v for k, v in dmg.items()
                 if k not in ("bad_chunks", "skipped_bytes", "truncated") and v not in (0, False)})
        case.eq("damaged: %sprocess.complete" % label, False, (drep.get("process") or {}).get("complete"))
        diff = rt.first_diff({"summary": rep.get("summary"), "sites": rep.get("sites")},
                             {"summary": drep.get("summary"), "sites": drep.get("sites")})
        case.check("damaged: %ssummary and sites as undamaged" % label, not diff, diff)


CASES = [
    ("bigtrace-4gib", case_bigtrace),
]
