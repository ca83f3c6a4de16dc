"""Integration cases: the CLI under Valgrind memcheck.

Traces of a few test programs that between them cover the reader's paths
(threads: several threads' EVENTS batches; cxx: operator new/delete entries
and demangling; forkexec: CHILD records, a fork child's and an exec'd image's
traces; dlopen: MODULE_UNLOAD and generations; phases: RSS samples and two
runs to compare) are read by `memviz report --json`, `memviz export --format
pprof`, `memviz timeline --json` and `memviz diff` under

    valgrind --tool=memcheck --error-exitcode=99 --leak-check=full
             --errors-for-leak-kinds=definite

Each run must exit 0 with no memcheck error (no invalid read or write, no
use of uninitialised memory, no definite leak) and print what the same
command prints without Valgrind. Three damaged copies of a trace (cut short,
bytes flipped, a chunk header broken and junk appended, all after the first
chunk) must give exit 0 or 1, never a crash, and a clean memcheck; as the
first chunk is intact, the report must still come out and count the damage.
Every input in tests/fuzz/crashes but the oom-* and timeout-* ones gets the
same treatment as the damaged copies. Last, a trace whose executable is
named by a FIFO must not hang the report (it is not replayed by the fuzzer:
the FIFO has to exist).

Valgrind is slow: the traces are small and each case runs a handful of
commands (about a minute in all).
"""

import glob
import json
import os
import random
import shutil
import struct
import subprocess

import run_tests as rt

VALGRIND = ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--num-callers=40"]
VALGRIND_TIMEOUT = 300


def memcheck(case, env, args, label, ok_codes=(0,), compare=True, want_json=False):
    """Runs `memviz ARGS` under memcheck and checks it. With compare, stdout
    must equal that of the same command run without Valgrind. Returns
    (rc, stdout) of the Valgrind run, or None."""
    if shutil.which("valgrind") is None:
        case.check("%s: valgrind is installed" % label, False,
                   "valgrind not found in PATH (scripts/install-deps.sh installs it)")
        return None
    rc, out, err, secs = rt.run(VALGRIND + [env.memviz] + args, timeout=VALGRIND_TIMEOUT)
    errs = err.decode("utf-8", "replace")
    summary = [l for l in errs.splitlines() if "ERROR SUMMARY:" in l]
    clean = bool(summary) and " 0 errors from 0 contexts" in summary[-1]
    ok = rc in ok_codes and clean
    detail = "%s, %s, %.1f s" % (rt.rc_str(rc), summary[-1].split("== ")[-1] if summary
                                 else "no ERROR SUMMARY line", secs)
    case.check("%s: exit in %s under memcheck, no memcheck error" % (label, list(ok_codes)), ok,
               detail if ok else detail + "; stderr: " + rt.tail(errs, 6000))
    if want_json and rc == 0:
        try:
            json.loads(out.decode("utf-8"))
            case.check("%s: valid JSON" % label, True)
        except ValueError as e:
            case.check("%s: valid JSON" % label, False, "%s; output: %s" % (e, rt.tail(out)))
    if compare:
        prc, pout, perr, _ = rt.run([env.memviz] + args, timeout=rt.REPORT_TIMEOUT)
        case.check("%s: same exit and output as without valgrind" % label,
                   prc == rc and pout == out,
                   "%s vs %s, output %s (%d vs %d bytes)" % (
                       rt.rc_str(rc), rt.rc_str(prc), "identical" if pout == out else "differs",
                       len(out), len(pout)))
    return rc, out


def check_trace(case, env, trace, label):
    """report --json, export --format pprof and timeline --json of a healthy trace."""
    memcheck(case, env, ["report", "--json", trace], label + ": report --json", want_json=True)
    memcheck(case, env, ["export", "--format", "pprof", "-o", os.devnull, trace],
             label + ": export --format pprof")
    memcheck(case, env, ["timeline", "--json", trace], label + ": timeline --json", want_json=True)


def simple(name, prog, args=(), **run_kw):
    def fn(env, workroot):
        case = rt.Case(name, workroot)
        trace = rt.memviz_run(case, env, prog, args=args, **run_kw)
        if trace:
            check_trace(case, env, trace, prog)
        return case
    return fn


def case_forkexec(env, workroot):
    """The parent's trace (CHILD records) and every child's: the fork child's
    and the image it exec'd."""
    case = rt.Case("memcheck-forkexec", workroot)
    trace = rt.memviz_run(case, env, "forkexec", stdout=b"churn: done\nforkexec: ok\n",
                          stderr_lines=["churn: stderr check"])
    if not trace:
        return case
    check_trace(case, env, trace, "forkexec")
    children = sorted(f for f in glob.glob(os.path.join(case.dir, "*.mvz")) if f != trace)
    if case.check("forkexec: the children's traces are there", children,
                  "files: %s" % os.listdir(case.dir)):
        for c in children:
            memcheck(case, env, ["report", "--json", c], "child %s: report --json" %
                     os.path.basename(c), want_json=True)
    return case


def case_phases_diff(env, workroot):
    """Two runs of phases (the second holds twice as much in phase_b):
    each one's views, and diff of the pair, as text and JSON."""
    case = rt.Case("memcheck-phases-diff", workroot)
    ph1 = rt.memviz_run(case, env, "phases", args=["1"], trace_name="ph1")
    ph2 = rt.memviz_run(case, env, "phases", args=["2"], trace_name="ph2")
    if not (ph1 and ph2):
        return case
    check_trace(case, env, ph1, "phases 1")
    memcheck(case, env, ["diff", ph1, ph2], "diff")
    memcheck(case, env, ["diff", "--json", ph1, ph2], "diff --json", want_json=True)
    return case


def chunks(data):
    """(offset, length) of each whole chunk of a trace (docs/FORMAT.md)."""
    out, pos = [], 16
    while pos + 12 <= len(data) and data[pos:pos + 4] == b"MVZC":
        clen = struct.unpack("<I", data[pos + 4:pos + 8])[0]
        if pos + 12 + clen > len(data):
            break
        out.append((pos, 12 + clen))
        pos += 12 + clen
    return out


def damage(data, how, rng):
    """A damaged copy of a trace's bytes; the first chunk (the PROCESS and
    MODULE_LOAD records) is left alone, so the trace stays usable."""
    ch = chunks(data)
    first_end = ch[0][0] + ch[0][1]
    big = max(ch[1:], key=lambda c: c[1])  # the largest later chunk: most events
    if how == "truncated":  # ends inside that chunk
        return data[: big[0] + big[1] // 2]
    if how == "flipped":  # bytes changed in later chunks
        buf = bytearray(data)
        for _ in range(12):
            i = rng.randrange(first_end, len(buf))
            buf[i] ^= rng.randrange(1, 256)
        return bytes(buf)
    # "header": the second chunk claims 2 GiB; junk and a stray chunk magic at the end
    buf = bytearray(data)
    buf[first_end + 4:first_end + 8] = b"\xff\xff\xff\x7f"
    return bytes(buf) + b"MVZC" + bytes(rng.randrange(256) for _ in range(100)) + b"MVZC\x05"


def case_damaged(env, workroot):
    """phases writes many small chunks (one per writer flush), so damage
    after the first one leaves a usable trace with a part missing."""
    case = rt.Case("memcheck-damaged", workroot)
    trace = rt.memviz_run(case, env, "phases", args=["1"])
    if not trace:
        return case
    data = open(trace, "rb").read()
    if not case.check("phases' trace has several chunks", len(chunks(data)) >= 3,
                      "%d chunks" % len(chunks(data))):
        return case
    rng = random.Random(20240612)
    for how in ("truncated", "flipped", "header"):
        path = os.path.join(case.dir, how + ".mvz")
        with open(path, "wb") as f:
            f.write(damage(data, how, rng))
        case.check("%s: differs from the trace" % how, open(path, "rb").read() != data)
        res = memcheck(case, env, ["report", "--json", path], how + ": report --json",
                       ok_codes=(0, 1), want_json=True)
        if res:
            rc, out = res
            try:
                dmg = json.loads(out.decode("utf-8")).get("damage") or {} if rc == 0 else {}
            except ValueError:
                dmg = {}
            case.check("%s: still reported, with the damage counted" % how,
                       rc == 0 and any(v not in (0, False) for v in dmg.values()),
                       "%s, damage %r" % (rt.rc_str(rc), dmg))
        memcheck(case, env, ["timeline", "--json", path], how + ": timeline --json",
                 ok_codes=(0, 1), want_json=True)
    return case


def uvarint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, i


def put_uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zstd(args, data):
    return subprocess.run(["zstd", "-q", "-c"] + args, input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def with_module_path(data, old, new):
    """The trace with the path of its MODULE_LOAD records that name `old`
    replaced by `new` (the first chunk decompressed, rewritten and compressed
    again with the zstd command)."""
    pos, clen = chunks(data)[0]
    raw = zstd(["-d"], data[pos + 12:pos + clen])
    out, i = bytearray(), 0
    while i < len(raw):
        kind = raw[i]
        n, j = uvarint(raw, i + 1)
        payload = raw[j:j + n]
        if kind == 2:  # MODULE_LOAD: 5 uvarints, then the path
            k = 0
            for _ in range(5):
                _, k = uvarint(payload, k)
            plen, m = uvarint(payload, k)
            if payload[m:m + plen] == old:
                payload = payload[:k] + put_uvarint(len(new)) + new + payload[m + plen:]
        out += bytes([kind]) + put_uvarint(len(payload)) + payload
        i = j + n
    comp = zstd(["-1", "--check", "--stream-size=%d" % len(out)], bytes(out))
    chunk = b"MVZC" + struct.pack("<II", len(comp), len(out)) + comp
    return data[:pos] + chunk + data[pos + clen:]


def case_fifo_module(env, workroot):
    """A trace whose executable is named by a FIFO: symbolization must not
    open(2) it for reading (that blocks until a writer comes, forever)."""
    case = rt.Case("memcheck-fifo-module", workroot)
    trace = rt.memviz_run(case, env, "cxx", stdout=b"cxx: done\n")
    if not trace or not case.check("the zstd command is installed", shutil.which("zstd"), ""):
        return case
    fifo = os.path.join(case.dir, "not-an-elf-file")
    os.mkfifo(fifo)
    data = open(trace, "rb").read()
    bad = with_module_path(data, env.prog("cxx").encode(), fifo.encode())
    case.check("the module path was replaced", bad != data and fifo.encode() in zstd(
        ["-d"], bad[chunks(bad)[0][0] + 12:sum(chunks(bad)[0])]), "no MODULE_LOAD names %s" %
        env.prog("cxx"))
    path = os.path.join(case.dir, "fifo-module.mvz")
    with open(path, "wb") as f:
        f.write(bad)
    rc, out, err, secs = rt.run([env.memviz, "report", "--json", path], timeout=20)
    case.check("report --json neither hangs nor crashes (exit 0)", rc == 0,
               "%s after %.1f s; stderr: %s" % (rt.rc_str(rc), secs, rt.tail(err)))
    if rc == 0:
        memcheck(case, env, ["report", "--json", path], "report --json", want_json=True)
    return case


def case_fuzz_crashes(env, workroot):
    """The inputs that made the fuzzer fail (tests/fuzz/crashes): the
    fuzzer's ASan cannot see into elfutils, memcheck can (a use-after-free
    of a Dwfl_Module only crashes when its memory happens to be unmapped)."""
    case = rt.Case("memcheck-fuzz-crashes", workroot)
    d = os.path.join(rt.REPO, "tests", "fuzz", "crashes")
    # oom-* and timeout-* inputs exhaust time or memory before the fix (under
    # Valgrind, for many minutes): fuzz-replay's limits check those.
    files = sorted(f for f in (os.listdir(d) if os.path.isdir(d) else [])
                   if not f.startswith(("oom-", "timeout-")))
    if case.check("tests/fuzz/crashes has inputs", files, "%d in %s" % (len(files), d)):
        for f in files:
            memcheck(case, env, ["report", "--json", os.path.join(d, f)], f + ": report --json",
                     ok_codes=(0, 1), want_json=True)
    return case


CASES = [
    ("memcheck-threads", simple("memcheck-threads", "threads")),
    ("memcheck-cxx", simple("memcheck-cxx", "cxx")),
    ("memcheck-dlopen", simple("memcheck-dlopen", "dlopen", stdout=b"plugin unloaded\n")),
    ("memcheck-forkexec", case_forkexec),
    ("memcheck-phases-diff", case_phases_diff),
    ("memcheck-damaged", case_damaged),
    ("memcheck-fuzz-crashes", case_fuzz_crashes),
    ("memcheck-fifo-module", case_fifo_module),
]
