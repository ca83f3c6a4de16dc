#!/usr/bin/env python3
"""Writes the SQL script of the sqlite3 accuracy workload to stdout.

Deterministic (fixed seed), so both profilers see byte-identical input:
a table with two secondary indexes, ROWS single-row INSERT statements in
TXNS transactions, then a handful of queries, an UPDATE and a DELETE.

usage: gen_sqlite.py [ROWS] [TXNS]      (defaults: 100000 4)
"""
import random
import sys

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
txns = int(sys.argv[2]) if len(sys.argv) > 2 else 4
rng = random.Random(20240601)
words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]

out = sys.stdout
w = out.write
w("PRAGMA cache_size = -16000;\n")
w("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
  "category TEXT, price REAL, qty INTEGER, note TEXT);\n")
w("CREATE INDEX item_name ON item(name);\n")
w("CREATE INDEX item_cat_price ON item(category, price);\n")
per_txn = (rows + txns - 1) // txns
n = 0
for t in range(txns):
    w("BEGIN;\n")
    for _ in range(per_txn):
        if n >= rows:
            break
        n += 1
        name = "%s-%s-%06d" % (rng.choice(words), rng.choice(words), rng.randrange(1000000))
        cat = rng.choice(words)
        price = rng.randrange(1, 100000) / 100.0
        qty = rng.randrange(0, 500)
        note = "x" * rng.randrange(0, 120)
        w("INSERT INTO item(name, category, price, qty, note) VALUES "
          "('%s', '%s', %.2f, %d, '%s');\n" % (name, cat, price, qty, note))
    w("COMMIT;\n")
w("SELECT count(*), sum(qty), round(avg(price), 2) FROM item;\n")
w("SELECT category, count(*), round(sum(price * qty), 2) FROM item "
  "GROUP BY category ORDER BY 3 DESC;\n")
w("SELECT name, price FROM item WHERE name LIKE 'echo-%' ORDER BY price DESC LIMIT 5;\n")
w("SELECT count(*) FROM item WHERE category = 'kilo' AND price BETWEEN 100 AND 200;\n")
w("SELECT a.category, count(*) FROM item a JOIN item b ON a.name = b.name "
  "WHERE a.id < 2000 GROUP BY a.category;\n")
w("BEGIN;\n")
w("UPDATE item SET qty = qty + 1 WHERE category IN ('alpha', 'bravo');\n")
w("DELETE FROM item WHERE id % 7 = 0;\n")
w("COMMIT;\n")
w("SELECT count(*) FROM item;\n")
w("SELECT group_concat(name, ',') FROM (SELECT name FROM item ORDER BY name LIMIT 200);\n")
