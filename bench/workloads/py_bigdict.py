"""Workload "python-big": a CPython 3.11 script that keeps a large heap alive.

Run with PYTHONMALLOC=malloc (as py_alloc.py is) so that every object
allocation goes through malloc/free. Builds a dict of 300,000 entries (at
scale 1.0) whose values are small containers, d[i] = [i, str(i), {"k": i}]
(about six malloc'ed blocks an entry: the int, the str, the list and its item
array, the inner dict and its keys), keeps it while it reads every entry,
then drops it: about 1.8 million blocks live at the peak, all freed together
at the end, long after their allocation.
usage: python3.11 py_bigdict.py [SCALE]
"""
import sys


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    n = int(300000 * scale)
    d = {}
    for i in range(n):
        d[i] = [i, str(i), {"k": i}]
    total = 0
    for v in d.values():
        total += v[0] + len(v[1]) + v[2]["k"]
    size = len(d)
    del d
    print(size, total)


main()
