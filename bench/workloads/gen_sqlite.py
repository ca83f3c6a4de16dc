#!/usr/bin/env python3
"""Writes the SQL of workload "sqlite" to stdout: a table with two secondary
indexes, ROWS inserts (default 200000) in transactions of 10000 rows, then a
few queries that use the indexes. Deterministic (fixed seed).
usage: gen_sqlite.py [ROWS] > inserts.sql; sqlite3 DB < inserts.sql
"""
import random
import sys


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    rnd = random.Random(1234)
    out = sys.stdout
    out.write("PRAGMA journal_mode=OFF;\nPRAGMA synchronous=OFF;\n")
    out.write("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
              "category INTEGER, price REAL, note TEXT);\n")
    out.write("CREATE INDEX items_name ON items(name);\n")
    out.write("CREATE INDEX items_cat_price ON items(category, price);\n")
    for i in range(rows):
        if i % 10000 == 0:
            if i:
                out.write("COMMIT;\n")
            out.write("BEGIN;\n")
        name = "item-%08x-%d" % (rnd.getrandbits(32), i)
        note = "n" * rnd.randint(0, 40)
        out.write("INSERT INTO items(name, category, price, note) VALUES('%s', %d, %.2f, '%s');\n"
                  % (name, rnd.randint(0, 99), rnd.random() * 1000, note))
    if rows:
        out.write("COMMIT;\n")
    out.write("SELECT count(*) FROM items;\n")
    out.write("SELECT category, count(*), avg(price) FROM items GROUP BY category ORDER BY 2 DESC LIMIT 3;\n")
    out.write("SELECT count(*) FROM items WHERE name BETWEEN 'item-1' AND 'item-2';\n")


main()
