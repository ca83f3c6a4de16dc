"""Workload "python": a CPython 3.11 script that allocates a lot.

Run with PYTHONMALLOC=malloc so that every object allocation goes through
malloc/free (and so is seen by both profilers). Builds and drops dicts of
strings, tuples and lists, formats text, sorts and joins; the scale argument
(default 1.0) multiplies the amount of work (1.0 is about 3 million
allocation calls, interpreter start-up included).
usage: python3.11 py_alloc.py [SCALE]
"""
import sys


def records(n, salt):
    out = {}
    for i in range(n):
        key = "k%d-%d" % (salt, i)
        out[key] = (i, str(i * 7), [i, i + 1, float(i) / 3.0])
    return out


def churn(n):
    total = 0
    for r in range(n // 2000):
        d = records(2000, r)
        words = sorted(d, key=lambda k: d[k][1])
        text = ",".join(words[:200])
        total += len(text) + sum(v[0] for v in d.values())
        parts = [w.upper() for w in text.split(",")]
        total += len(parts)
    return total


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    n = int(230000 * scale)
    keep = []
    total = churn(n)
    for i in range(n // 10):
        keep.append({"id": i, "name": "item%d" % i, "tags": ["a", str(i)]})
    total += len(keep)
    print(total)


main()
