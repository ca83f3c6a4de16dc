#!/usr/bin/env bash
# bench/accuracy/run.sh - side-by-side agreement check of memviz and heaptrack.
#
# Runs three workloads (an insert-heavy sqlite3 script, a dict-building
# CPython 3.11 script, a hashes/arrays/strings perl script) once under memviz
# and once under heaptrack, with identical inputs, arguments and (shape of)
# environment, then prints a markdown table of allocation calls, peak heap
# bytes, leaked bytes/blocks and temporary allocations from both tools with
# their relative difference. See docs/ACCURACY.md for what the differences
# mean.
#
# usage: bench/accuracy/run.sh [--keep] [--out FILE] [--no-env-pad] [WORKLOAD...]
#   WORKLOAD      sqlite, python, perl (default: all three)
#   --keep        keep the temporary directory with all traces and outputs
#   --out FILE    also write the markdown table to FILE
#   --no-env-pad  do not even out the environments (see below)
# Environment:
#   MEMVIZ        memviz binary (default: build/bin/memviz of this checkout;
#                 `make all` first)
#   ACC_SQLITE_ROWS, ACC_SQLITE_TXNS, ACC_PYTHON_N, ACC_PERL_N   workload sizes
#
# Exit status: 0 when every compared metric agrees within 1% (after removing
# heaptrack's own C++ runtime allocation), 1 when one does not, 2 on errors
# (a tool missing, a run failing).
#
# Environment padding: `memviz run` leaves LD_PRELOAD, MEMVIZ_DIR,
# MEMVIZ_FOLLOW and MEMVIZ_PARENT_TRACE in the traced program's environment
# (it follows children), heaptrack's wrapper script adds PWD and removes its
# own variables. perl and python copy the environment into %ENV/os.environ,
# so each extra variable is a few extra allocations. Unless --no-env-pad is
# given, each run gets the variables only the other tool's run has (same
# names and values; LD_* names are replaced by a same-length dummy name), so
# both programs see environments of the same shape.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
MEMVIZ=${MEMVIZ:-$root/build/bin/memviz}
SQLITE=/usr/bin/sqlite3
PYTHON=/usr/bin/python3.11
PERL=/usr/bin/perl
ROWS=${ACC_SQLITE_ROWS:-100000}
TXNS=${ACC_SQLITE_TXNS:-4}
PY_N=${ACC_PYTHON_N:-200000}
PERL_N=${ACC_PERL_N:-100000}

keep=0
out=""
envpad=1
workloads=()
while [ $# -gt 0 ]; do
    case "$1" in
    --keep) keep=1 ;;
    --out) out=${2:?--out needs a file}; shift ;;
    --no-env-pad) envpad=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    sqlite|python|perl) workloads+=("$1") ;;
    *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
[ ${#workloads[@]} -gt 0 ] || workloads=(sqlite python perl)

die() { echo "run.sh: $*" >&2; exit 2; }

# ---- tools ----
missing=()
for t in heaptrack heaptrack_print zstd python3 gcc; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
for t in "$SQLITE" "$PYTHON" "$PERL"; do
    [ -x "$t" ] || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
    die "required tool(s) missing: ${missing[*]}
  (Debian: apt-get install heaptrack zstd python3 gcc sqlite3 python3.11 perl)"
fi
[ -x "$MEMVIZ" ] || die "memviz not found at $MEMVIZ (run 'make all' in $root, or set MEMVIZ)"
objs=()
for o in "$root"/build/obj/*/*.o; do # the reader and the analysis (not the servers, UIs)
    case "$o" in */trace/*|*/analysis/*|*/util/*) objs+=("$o") ;; esac
done
[ -e "${objs[0]:-}" ] || die "no objects in $root/build/obj (run 'make all' in $root)"

work=$(mktemp -d "${TMPDIR:-/tmp}/memviz-accuracy.XXXXXX")
cleanup() { if [ "$keep" = 1 ]; then echo "run.sh: kept $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT

# the recount helper, against the objects `make all` built
gcc -std=gnu11 -O2 -D_GNU_SOURCE -I"$root/src" "$here/mvz_recount.c" "${objs[@]}" \
    -lzstd -ldw -lelf -lz -lstdc++ -lm -o "$work/mvz_recount" \
    || die "cannot build mvz_recount against $root/build/obj (rebuild with 'make all')"

# ---- inputs ----
mkdir -p "$work/input"
python3 "$here/gen_sqlite.py" "$ROWS" "$TXNS" >"$work/input/sqlite.sql"
: >"$work/input/empty"

# One fixed environment for every run (plus padding, see above); an empty
# HOME so that no ~/.sqliterc or similar per-user file takes part.
mkdir -p "$work/home"
base_env=(PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8
    PYTHONMALLOC=malloc PYTHONHASHSEED=0 PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0)

workload_cmd() { # sets cmd=(...) and stdin for workload $1
    case "$1" in
    sqlite) cmd=("$SQLITE" bench.db); stdin="$work/input/sqlite.sql" ;;
    python) cmd=("$PYTHON" -B -s "$here/dicts.py" "$PY_N"); stdin="$work/input/empty" ;;
    perl) cmd=("$PERL" "$here/hashes.pl" "$PERL_N"); stdin="$work/input/empty" ;;
    esac
}

# Prints the environment the traced program sees under each tool, one
# NAME=VALUE per line, by running a probe program the same way.
probe='import os,sys; open(sys.argv[1],"wb").write(b"\n".join(k+b"="+v for k,v in sorted(os.environb.items())))'
env_pads() { # $1 = workload dir; writes $1/pad.mvz and $1/pad.hpt (NAME=VALUE lines)
    local d=$1
    (cd "$d/mvz" && env -i "${base_env[@]}" "$MEMVIZ" run -o "$d/mvz/trace.mvz" -- \
        "$PYTHON" -c "$probe" "$d/env.mvz" >/dev/null 2>&1) || die "memviz probe run failed"
    (cd "$d/hpt" && env -i "${base_env[@]}" heaptrack -o "$d/hpt/probe" \
        "$PYTHON" -c "$probe" "$d/env.hpt" >/dev/null 2>&1) || die "heaptrack probe run failed"
    rm -f "$d/mvz/trace.mvz" "$d"/hpt/probe.*
    python3 - "$d" <<'EOF'
import sys
d = sys.argv[1]
def load(p):
    out = {}
    for line in open(p, "rb").read().split(b"\n"):
        if b"=" in line:
            k, v = line.split(b"=", 1)
            out[k.decode()] = v.decode()
    return out
m, h = load(d + "/env.mvz"), load(d + "/env.hpt")
def pads(only, other_dir, this_dir):
    res, n = [], 0
    for k in sorted(only):
        v = only[k].replace(other_dir, this_dir)
        if k.startswith("LD_"):
            k = chr(ord("Q") + n) * len(k); n += 1
        res.append("%s=%s" % (k, v))
    return res
mo = {k: v for k, v in m.items() if k not in h}
ho = {k: v for k, v in h.items() if k not in m}
open(d + "/pad.hpt", "w").write("".join(x + "\n" for x in pads(mo, d + "/mvz", d + "/hpt")))
open(d + "/pad.mvz", "w").write("".join(x + "\n" for x in pads(ho, d + "/hpt", d + "/mvz")))
for k in sorted(set(m) & set(h)):
    if len(m[k]) != len(h[k]):
        print("run.sh: note: %s differs in length between the runs" % k, file=sys.stderr)
EOF
}

run_workload() {
    local w=$1 d="$work/$1"
    mkdir -p "$d/mvz" "$d/hpt"
    workload_cmd "$w"
    local padm=() padh=()
    if [ "$envpad" = 1 ]; then
        env_pads "$d"
        mapfile -t padm <"$d/pad.mvz"
        mapfile -t padh <"$d/pad.hpt"
    fi
    echo "run.sh: $w under memviz ..." >&2
    (cd "$d/mvz" && env -i "${base_env[@]}" "${padm[@]}" "$MEMVIZ" run -o "$d/mvz/trace.mvz" -- \
        "${cmd[@]}" <"$stdin" >"$d/mvz/stdout.txt" 2>"$d/mvz/stderr.txt") \
        || die "$w under memviz failed; see $d/mvz/stderr.txt (use --keep)"
    echo "run.sh: $w under heaptrack ..." >&2
    (cd "$d/hpt" && env -i "${base_env[@]}" "${padh[@]}" heaptrack -o "$d/hpt/trace" \
        "${cmd[@]}" <"$stdin" >"$d/hpt/stdout.txt" 2>"$d/hpt/stderr.txt") \
        || die "$w under heaptrack failed; see $d/hpt/stderr.txt (use --keep)"
    # same program output under both tools, or the runs are not comparable
    grep -v -e '^heaptrack output will be written to ' -e '^/.*libheaptrack_preload\.so$' \
        -e '^starting application, this might take some time\.\.\.$' -e '^Heaptrack finished!' \
        -e '^  heaptrack --analyze ' -e '^$' "$d/hpt/stdout.txt" >"$d/hpt/program_stdout.txt" || true
    grep -v -e '^$' "$d/mvz/stdout.txt" >"$d/mvz/program_stdout.txt" || true
    cmp -s "$d/mvz/program_stdout.txt" "$d/hpt/program_stdout.txt" \
        || echo "run.sh: warning: $w printed different output under the two tools" >&2
    "$MEMVIZ" report --json "$d/mvz/trace.mvz" >"$d/mvz/report.json" \
        || die "memviz report failed for $w"
    "$work/mvz_recount" "$d/mvz/trace.mvz" >"$d/mvz/recount.json" \
        || die "mvz_recount failed for $w"
    local hfile=""
    for f in "$d/hpt/trace.zst" "$d/hpt/trace.gz"; do
        [ -e "$f" ] && { hfile=$f; break; }
    done
    [ -n "$hfile" ] || die "heaptrack wrote no data file for $w"
    heaptrack_print -f "$hfile" >"$d/hpt/print.txt" 2>"$d/hpt/print.err" \
        || die "heaptrack_print failed for $w"
}

for w in "${workloads[@]}"; do
    run_workload "$w"
done

{
    rev=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
    echo "## memviz vs heaptrack ($(date -u +%Y-%m-%d), $(nproc) CPUs, $("$MEMVIZ" version 2>&1 | head -1) at $rev, heaptrack $(heaptrack --version 2>&1 | awk '{print $2}'))"
    echo
    echo "Workloads: sqlite = $ROWS inserts in $TXNS transactions; python = dicts.py $PY_N; perl = hashes.pl $PERL_N. Environment padding: $([ "$envpad" = 1 ] && echo on || echo off)."
    echo
    set +e
    python3 "$here/compare.py" "$work" "${workloads[@]}"
    echo $? >"$work/compare.rc"
    set -e
} | tee "$work/table.md"
rc=$(cat "$work/compare.rc")
[ -z "$out" ] || cp "$work/table.md" "$out"
exit "$rc"
