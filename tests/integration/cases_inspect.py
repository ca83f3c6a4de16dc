"""Integration cases for `memviz inspect --block ADDR`: one block of a heap
snapshot, with its bytes (memviz run --snapshot-contents) and its type.

  snapshot-inspect     typed (C++): a Circle and a Rect held through
                       Shape pointers are typed by their vtables, members
                       and values exact (id 7, radius 2.5; 3 by 4); a C list
                       of two nodes is typed along the path from g_list
                       (values 11 and 22, the next pointer equal to the
                       second node's address); the bytes are the block's,
                       the pointers in it and to it are the snapshot's;
                       without --snapshot-contents the type still comes
                       from the path, with no bytes; bad input
"""
import json
import os

import run_tests as rt


def inspect(case, env, trace, addr, what, extra=()):
    rc, out, err, _ = rt.run([env.memviz, "inspect", "--json", "--block", addr] + list(extra)
                             + [trace])
    if not case.check("%s: exits 0" % what, rc == 0, "%s %s" % (rt.rc_str(rc), rt.tail(err))):
        return None
    try:
        return json.loads(out.decode())
    except ValueError:
        case.check("%s: JSON parses" % what, False, rt.tail(out))
        return None


def members(doc):
    return {m.get("name"): m.get("value") for m in (doc.get("type") or {}).get("members") or []}


def shapes(case, env, trace, circle, rect):
    c = inspect(case, env, trace, circle, "the Circle")
    r = inspect(case, env, trace, rect, "the Rect")
    if not c or not r:
        return
    case.eq("the Circle: typed by its vtable, id 7, radius 2.5",
            ["struct Circle", "vtable for Circle", "7", "2.5"],
            [c["type"]["name"], c["type"]["how"].split("into ")[-1],
             members(c).get("Shape.id"), members(c).get("radius")])
    case.eq("the Rect: typed by its vtable, id 8, 3 by 4", ["struct Rect", "8", "3", "4"],
            [r["type"]["name"], members(r).get("Shape.id"), members(r).get("w"),
             members(r).get("h")])
    case.eq("the Circle's block: 24 bytes, all stored, as hex", [24, 24, 48],
            [c["block"]["size"], c.get("stored_bytes"), len(c.get("bytes") or "")])


def nodes(case, env, trace, first, second):
    a = inspect(case, env, trace, first, "the first node")
    b = inspect(case, env, trace, second, "the second node")
    if not a or not b:
        return
    case.eq("the list's nodes: typed along the path from g_list, values 11 and 22, tags \"n\"",
            [["struct node", "11", '"n"'], ["struct node", "22", '"n"']],
            [[d["type"]["name"], members(d).get("value"), members(d).get("tag")] for d in (a, b)])
    case.check("how: the path from g_list", "g_list" in a["type"]["how"], a["type"]["how"])
    case.eq("the first node's next is the second node", int(second, 16),
            int(members(a).get("next") or "0", 16))
    case.eq("the pointers in the first node: +0 to the second, at its start",
            [{"offset": 0, "target": int(second, 16), "kind": "start"}],
            [{k: p[k] for k in ("offset", "target", "kind")} for p in a.get("pointers") or []])
    raw = bytes.fromhex(a.get("bytes") or "")
    case.eq("its bytes: next, then 11, then 'n'", [int(second, 16), 11, ord("n")],
            [int.from_bytes(raw[0:8], "little"), int.from_bytes(raw[8:16], "little"), raw[16]]
            if len(raw) == 24 else None)
    path = [s.get("name") or s.get("block") for s in a.get("path") or []]
    case.eq("its path: g_list, then the node", ["g_list", int(first, 16)], path)


def without_contents(case, env, workroot_trace, first):
    doc = inspect(case, env, workroot_trace, first, "no --snapshot-contents")
    if doc:
        case.eq("without --snapshot-contents: no bytes, the type from the path, no values",
                [None, "struct node", None], [doc.get("bytes"), (doc.get("type") or {}).get("name"),
                                              members(doc).get("value")])


def bad_input(case, env, trace):
    for args, code, want in (([trace], 2, b"--block ADDR is required"),
                             (["--block", "0x1", trace], 1, b"no live block at 0x1"),
                             (["--block", "zz", trace], 1, b"no live block at zz"),
                             (["--block", "0x1", "--snapshot", "nope", trace], 1,
                              b"no complete snapshot named 'nope'")):
        rc, out, err, _ = rt.run([env.memviz, "inspect"] + args)
        case.check("inspect %s: one line, exit %d" % (" ".join(args[:2]), code),
                   rc == code and want in err and len(err.splitlines()) <= 2, "%s %r" % (rc, err))


def run_typed(case, env, name, opts):
    trace = os.path.join(case.dir, name + ".mvz")
    rc, out, err, _ = rt.run([env.memviz, "run", "-o", trace] + opts + ["--", env.prog("typed")],
                             cwd=case.dir)
    addrs = out.decode().split()
    if not case.check("%s: memviz run exits 0, the program prints four addresses" % name,
                      rc == 0 and len(addrs) == 4, "%s %r %s" % (rc, out, rt.tail(err))):
        return None, []
    return trace, addrs


def case_inspect(env, workroot):
    case = rt.Case("snapshot-inspect", workroot)
    trace, addrs = run_typed(case, env, "typed", ["--snapshot-contents"])
    if trace:
        shapes(case, env, trace, addrs[0], addrs[1])
        nodes(case, env, trace, addrs[2], addrs[3])
        rc, out, err, _ = rt.run([env.memviz, "inspect", "--block", addrs[2], trace])
        case.check("text: the type, its values, the bytes in hex",
                   rc == 0 and b"type: struct node (the types along the path from g_list)" in out
                   and b"value = 11" in out and b"000000  " in out, rt.tail(out))
        bad_input(case, env, trace)
    plain, paddrs = run_typed(case, env, "plain", [])
    if plain:
        without_contents(case, env, plain, paddrs[2])
    return case


CASES = [
    ("snapshot-inspect", case_inspect),
]
