"""Integration cases for the command line's conventions: help, options,
installation, trimmed exports.

  cli-help             `memviz help CMD` is `memviz CMD --help`; help texts
                       print what they mean (no "%%"); --version
  cli-options-anywhere the analysis commands take options after the trace as
                       before it; run still stops at the program
  export-trim          collapsed and speedscope exports trimmed by --depth,
                       --fold-recursion and --min-percent keep their totals;
                       a stack cut at the trace's depth cap says so
  cli-install          make install puts the binary, the agent, the man page
                       and the bash completion in place; the installed
                       memviz traces; the man page renders without warnings;
                       the completion offers every option each --help lists
"""

import os
import shutil
import subprocess

import cases_export_stacks as es
import run_tests as rt


def case_cli_help(env, workroot):
    case = rt.Case("cli-help", workroot)
    for cmd in ("run", "report", "export", "timeline", "diff", "live", "ui", "html", "tui"):
        rc, out, err, _ = rt.run([env.memviz, "help", cmd])
        rc2, out2, err2, _ = rt.run([env.memviz, cmd, "--help"])
        case.eq("help %s: exit 0" % cmd, 0, rc)
        case.check("help %s: the same text as %s --help" % (cmd, cmd), out == out2 and out,
                   rt.tail(out))
        case.check("help %s: no doubled percent signs" % cmd, b"%%" not in out, rt.tail(out))
    rc, out, err, _ = rt.run([env.memviz, "help", "report"])
    case.check("report's help says P% of the total", b"under P% of the total" in out, rt.tail(out))
    rc, out, err, _ = rt.run([env.memviz, "help", "nope"])
    case.eq("help of an unknown command: exit 2", 2, rc)
    case.check("help of an unknown command: says so", b"no help for 'nope'" in err, rt.tail(err))
    rc, out, err, _ = rt.run([env.memviz, "--version"])
    case.check("--version prints memviz and a version",
               rc == 0 and rt.re.match(rb"memviz \d+\.\d+\.\d+\n$", out), rt.tail(out))
    return case


def case_options_anywhere(env, workroot):
    case = rt.Case("cli-options-anywhere", workroot)
    trace = rt.memviz_run(case, env, "churn", stdout=b"churn: done\n",
                          stderr_lines=["churn: stderr check"])
    if not trace:
        return case
    out_a = os.path.join(case.dir, "a.folded")
    out_b = os.path.join(case.dir, "b.folded")
    pairs = [
        ("report", ["report", "--top", "2", "--json", trace], ["report", trace, "--top", "2", "--json"]),
        ("timeline", ["timeline", "--csv", trace], ["timeline", trace, "--csv"]),
        ("diff", ["diff", "--json", trace, trace], ["diff", trace, trace, "--json"]),
        ("export", ["export", "--format", "collapsed", "-o", out_a, trace],
         ["export", trace, "--format", "collapsed", "-o", out_b]),
    ]
    for name, before, after in pairs:
        rc1, o1, e1, _ = rt.run([env.memviz] + before)
        rc2, o2, e2, _ = rt.run([env.memviz] + after)
        case.check("%s: options after the trace work as before it" % name,
                   rc1 == 0 and rc2 == 0 and o1 == o2, "exit %r/%r; %s" % (rc1, rc2, rt.tail(e2)))
    case.check("export: the same file either way",
               os.path.exists(out_a) and os.path.exists(out_b)
               and open(out_a, "rb").read() == open(out_b, "rb").read(), "")
    echo = shutil.which("echo")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", os.path.join(case.dir, "e.mvz"), echo,
                              "--json", "--top", "1"], cwd=case.dir)
    case.eq("run: options after the program are the program's", b"--json --top 1\n", out)
    return case


COMPLETE = r"""
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_memviz
printf '%s\n' "${COMPREPLY[@]}"
"""


def complete(script, words):
    out = subprocess.run(["bash", "-c", COMPLETE, "complete", script] + words,
                         capture_output=True, text=True)
    return sorted(set(out.stdout.split()))


def case_install(env, workroot):
    case = rt.Case("cli-install", workroot)
    dest = os.path.join(case.dir, "root")
    rc = subprocess.run(["make", "-s", "-C", rt.REPO, "install", "DESTDIR=" + dest, "PREFIX=/usr"],
                        capture_output=True, text=True)
    case.eq("make install exits 0", 0, rc.returncode)
    files = {"bin/memviz", "lib/libmemviz.so", "lib/libmemviz-stub.so", "include/memviz.h",
             "include/memviz.hpp",
             "share/man/man1/memviz.1", "share/bash-completion/completions/memviz"}
    missing = sorted(f for f in files if not os.path.isfile(os.path.join(dest, "usr", f)))
    case.eq("installed files", [], missing)
    if missing:
        return case
    memviz = os.path.join(dest, "usr/bin/memviz")
    trace = os.path.join(case.dir, "t.mvz")
    r, out, err, _ = rt.run([memviz, "run", "-o", trace, "--", env.prog("churn")], cwd=case.dir)
    case.eq("the installed memviz finds its agent and traces", 0, r)
    case.check("a trace was written", os.path.isfile(trace) and os.path.getsize(trace) > 0, "")
    # a program built against the installed header and stub runs without memviz
    src = os.path.join(case.dir, "api.c")
    with open(src, "w") as f:
        f.write('#include <memviz.h>\nint main(void) { memviz_snapshot("x"); '
                'memviz_ignore(0); memviz_register_root(0, 0); return 0; }\n')
    exe = os.path.join(case.dir, "api")
    cc = subprocess.run(["cc", "-I", os.path.join(dest, "usr/include"), "-o", exe, src,
                         "-L", os.path.join(dest, "usr/lib"), "-lmemviz-stub",
                         "-Wl,-rpath," + os.path.join(dest, "usr/lib")],
                        capture_output=True, text=True)
    case.eq("a program builds with the installed memviz.h and -lmemviz-stub", 0, cc.returncode)
    if cc.returncode == 0:
        r, out, err, _ = rt.run([exe])
        case.eq("and runs without memviz", 0, r)
        r, out, err, _ = rt.run([memviz, "run", "-o", os.path.join(case.dir, "api.mvz"), "--",
                                 exe], cwd=case.dir)
        r2, out2, err2, _ = rt.run([memviz, "leaks", "--snapshot", "x",
                                    os.path.join(case.dir, "api.mvz")])
        case.eq("and under memviz, its snapshot is in the trace", [0, 0], [r, r2])
    man = subprocess.run(["groff", "-man", "-ww", "-z", os.path.join(dest, "usr/share/man/man1/memviz.1")],
                         capture_output=True, text=True)
    case.check("the man page renders without warnings", man.returncode == 0 and not man.stderr,
               man.stderr[-300:])
    script = os.path.join(dest, "usr/share/bash-completion/completions/memviz")
    case.check("completion: the commands",
               {"run", "report", "timeline", "diff", "export", "leaks", "retain", "growth", "snapshot"}
               <= set(complete(script, ["memviz", ""])),
               repr(complete(script, ["memviz", ""])))
    for cmd in ("run", "report", "timeline", "diff", "export", "leaks", "retain", "growth"):
        r, out, err, _ = rt.run([env.memviz, cmd, "--help"])
        listed = set(rt.re.findall(r"(?<![\w-])(--[a-z][a-z-]+|-o)\b", out.decode()))
        offered = set(complete(script, ["memviz", cmd, "-"]))
        case.eq("completion: %s offers every option its --help lists" % cmd, [],
                sorted(listed - offered))
    case.eq("completion: --format's values", ["callgrind", "chrome", "collapsed", "massif",
                                               "pprof", "speedscope"],
            complete(script, ["memviz", "export", "--format", ""]))
    return case


def folded(case, env, trace, args, label):
    out = os.path.join(case.dir, label.replace(" ", "_") + ".folded")
    rc, o, err, _ = rt.run([env.memviz, "export", "--format", "collapsed", "-o", out] + args + [trace])
    if not case.eq("%s: export exits 0" % label, 0, rc):
        return []
    lines = []
    for line in open(out).read().splitlines():
        stack, value = line.rsplit(" ", 1)
        lines.append((stack.split(";"), int(value)))
    return lines


def case_export_trim(env, workroot):
    case = rt.Case("export-trim", workroot)
    trace = rt.memviz_run(case, env, "recursion")
    if not trace:
        return case
    for cost in ("allocations", "peak"):
        full = folded(case, env, trace, ["--cost", cost], "full " + cost)
        total = sum(v for _, v in full)
        case.check("%s: recursion is deep in the full export" % cost,
                   any(f.count("recurse") > 100 for f, _ in full), "")
        rec = folded(case, env, trace, ["--cost", cost, "--fold-recursion"], "fold " + cost)
        case.eq("--fold-recursion: same total (%s)" % cost, total, sum(v for _, v in rec))
        case.check("--fold-recursion: no frame repeats the one before it",
                   all(f[i] != f[i + 1] for f, _ in rec for i in range(len(f) - 1)),
                   repr([f for f, _ in rec])[:300])
        short = folded(case, env, trace, ["--cost", cost, "--depth", "2"], "depth " + cost)
        case.eq("--depth 2: same total (%s)" % cost, total, sum(v for _, v in short))
        case.check("--depth 2: at most 2 frames and the marker of the rest",
                   all(len(f) <= 3 and (len(f) < 3 or f[0] == "[outer frames]") for f, _ in short),
                   repr([f for f, _ in short]))
        # peak: the 43-byte site is 50.6% of 85, the 42-byte one 49.4%
        small = folded(case, env, trace, ["--cost", cost, "--min-percent", "50.5"], "min " + cost)
        case.eq("--min-percent 50.5: same total (%s)" % cost, total, sum(v for _, v in small))
        case.check("--min-percent 50.5: every stack but the pseudo one is 50.5% or more",
                   all(v * 200 >= 101 * total or f == ["[sites under --min-percent]"]
                       for f, v in small), repr(small)[:300])
        if cost == "peak":
            case.eq("--min-percent 50.5, peak: the 43-byte site and the rest",
                    [43, 42], [v for f, v in sorted(small, key=lambda x: -x[1])])
    capped = rt.memviz_run(case, env, "recursion", opts=["--depth", "50"], trace_name="capped")
    if capped:
        lines = folded(case, env, capped, ["--cost", "allocations"], "capped")
        case.check("a stack cut at the depth cap starts with the marker",
                   lines and all(f[0] == "[cut at the depth cap]" and len(f) == 51 for f, _ in lines),
                   repr([(f[:2], len(f)) for f, _ in lines]))
    out = os.path.join(case.dir, "s.json")
    ends = []
    for args in ([], ["--min-percent", "60", "--depth", "3", "--fold-recursion"]):
        rc, o, err, _ = rt.run([env.memviz, "export", "--format", "speedscope", "-o", out] + args + [trace])
        doc = rt.json.load(open(out)) if rc == 0 else {}
        ends.append(sorted((p["name"], p["endValue"]) for p in doc.get("profiles") or []))
    case.check("speedscope trimmed: every profile keeps its total", ends[0] and ends[0] == ends[1],
               repr(ends))
    trim_other_formats(case, env, trace)
    return case


TRIM = ["--depth", "2", "--min-percent", "50.5"]


def trim_other_formats(case, env, trace):
    """pprof, massif and callgrind are trimmed as collapsed is: same totals,
    at most 2 frames and the marker, the small sites in one."""
    genv = es.go_env(case)
    sums = []
    for args in ([], TRIM):
        path = os.path.join(case.dir, "trim%d.pb.gz" % len(args))
        rc, o, err, _ = rt.run([env.memviz, "export", "--format", "pprof", "--cost", "peak", "-o",
                                path] + args + [trace])
        text = es.pprof(case, "-raw of a trimmed export", ["-raw", path], genv)
        raw = es.parse_raw(case, text) if text else None
        if not raw:
            return
        sums.append([sum(v[k] for v, _ in raw["samples"]) for k in range(4)])
    names = [[raw["locations"][i][2][0][0] for i in locs] for _, locs in raw["samples"]]
    case.eq("pprof trimmed: the same four totals", sums[0], sums[1])
    case.check("pprof trimmed: at most 2 frames and the marker; the small sites in one",
               all(len(n) <= 3 and (len(n) < 3 or n[-1] == "[outer frames]") for n in names)
               and ["[sites under --min-percent]"] in names, repr(names)[:400])
    for fmt in ("massif", "callgrind"):
        outs = []
        for args in ([], TRIM):
            rc, o, err, _ = rt.run([env.memviz, "export", "--format", fmt, "--cost", "peak"] + args
                                   + [trace])
            case.eq("%s %s: exits 0" % (fmt, " ".join(args)), 0, rc)
            outs.append(o.decode(errors="replace"))
        if fmt == "massif":
            tops = [rt.re.findall(r"^n\d+: (\d+) \(heap allocation", o, rt.re.M) for o in outs]
            depth = max(len(m) for m in rt.re.findall(r"^( *)n\d+:", outs[1], rt.re.M))
            case.eq("massif trimmed: the same peak tree total", tops[0], tops[1])
            case.check("massif trimmed: 2 frames and the marker below the root; small sites in one",
                       depth <= 3 and "[outer frames]" in outs[1]
                       and "[sites under --min-percent]" in outs[1], "depth %d" % depth)
        else:
            totals = [rt.re.findall(r"^totals: (.*)$", o, rt.re.M) for o in outs]
            case.eq("callgrind trimmed: the same totals", totals[0], totals[1])
            case.check("callgrind trimmed: the marker functions",
                       "fn=(" in outs[1] and "[outer frames]" in outs[1]
                       and "[sites under --min-percent]" in outs[1], outs[1][-400:])


CASES = [
    ("cli-help", case_cli_help),
    ("cli-options-anywhere", case_options_anywhere),
    ("cli-install", case_install),
    ("export-trim", case_export_trim),
]
