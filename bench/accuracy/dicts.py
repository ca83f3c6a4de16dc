"""CPython accuracy workload: builds, reshapes and discards dictionaries.

Run as: PYTHONMALLOC=malloc PYTHONHASHSEED=0 python3.11 -B -s dicts.py [N]
(PYTHONMALLOC=malloc sends every object allocation to malloc, so the
profilers see each one.) Deterministic: fixed seed, fixed hash seed.
"""
import random
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
rng = random.Random(12345)

# 1. a large str -> tuple dict
people = {}
for i in range(N):
    key = "user%07d" % i
    people[key] = (i, rng.random(), "city%d" % (i % 97))

# 2. word counts over generated text
vocab = ["w%04d" % i for i in range(5000)]
counts = {}
for _ in range(N):
    word = vocab[int(rng.random() * rng.random() * len(vocab))]
    counts[word] = counts.get(word, 0) + 1

# 3. group people by city: dict of lists, then dict of dicts
by_city = {}
for key, (idx, score, city) in people.items():
    by_city.setdefault(city, []).append(key)
summary = {city: {"n": len(keys), "first": keys[0], "last": keys[-1]}
           for city, keys in by_city.items()}

# 4. an inverted index: int -> set of keys, built and dropped
inverted = {}
for key, (idx, score, city) in people.items():
    inverted.setdefault(int(score * 1000), set()).add(key)
largest = max(len(v) for v in inverted.values())
del inverted

# 5. churn: delete half of the big dict, rebuild a copy, merge
for i in range(0, N, 2):
    del people["user%07d" % i]
copy = dict(people)
merged = {**copy, **{("extra%d" % i): i for i in range(N // 4)}}
del copy

# 6. nested dicts serialised to strings and parsed back
records = [{"id": i, "tags": ["t%d" % (i % 13), "t%d" % (i % 7)], "meta": {"k": i * 2}}
           for i in range(N // 4)]
text = "\n".join(repr(r) for r in records)
total = sum(len(line) for line in text.splitlines())

print(len(people), len(counts), len(summary), largest, len(merged), len(records), total)
