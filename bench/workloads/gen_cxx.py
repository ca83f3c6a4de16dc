#!/usr/bin/env python3
"""Writes the C++ source of workload "cc1plus" to stdout: a few standard
headers and COUNT (default 120) generated units, about 27 lines each (about
3,300 lines for 120). One unit in TEMPLATE_EVERY (default 4) is a class
template using std::vector, std::map and std::string with two explicit
instantiations and a function using it (template instantiation is what makes
g++ slow); the others are plain structs and C-style functions with loops and
switches. Deterministic.
usage: gen_cxx.py [COUNT [TEMPLATE_EVERY]] > gen.cpp; g++ -O1 -c gen.cpp
"""
import sys

HEAD = """#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>
"""

UNIT = """
template <typename T>
struct Box{i} {{
    std::vector<T> items;
    std::map<std::string, T> index;
    void add(const std::string &k, T v) {{
        items.push_back(v);
        index[k + "{i}"] = v * {m};
    }}
    T total() const {{
        return std::accumulate(items.begin(), items.end(), T{{}});
    }}
    std::vector<std::string> keys() const {{
        std::vector<std::string> out;
        for (auto &kv : index) out.push_back(kv.first);
        std::sort(out.begin(), out.end());
        return out;
    }}
}};
template struct Box{i}<long>;
template struct Box{i}<double>;
long use{i}(int n) {{
    auto b = std::make_unique<Box{i}<long>>();
    for (int j = 0; j < n; j++) b->add(std::to_string(j * {m}), j);
    return b->total() + (long)b->keys().size();
}}
"""


PLAIN = """
struct Rec{i} {{
    int id;
    double weight;
    long counts[{m}];
    const char *name;
}};
static double score{i}(const Rec{i} *r, int n) {{
    double s = 0;
    for (int j = 0; j < n; j++) {{
        switch ((r[j].id + {m}) % 4) {{
        case 0: s += r[j].weight * {m}; break;
        case 1: s -= r[j].counts[j % {m}]; break;
        case 2: s += r[j].name ? r[j].name[0] : {i}; break;
        default: s *= 1.0 + 1.0 / (j + {m}); break;
        }}
    }}
    return s;
}}
long use{i}(int n) {{
    Rec{i} r[8] = {{}};
    for (int j = 0; j < 8; j++) {{
        r[j].id = j * {m} + n;
        r[j].weight = j / {m}.0;
        r[j].counts[j % {m}] = j;
    }}
    return (long)score{i}(r, n < 8 ? n : 8);
}}
"""


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    every = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    out = sys.stdout
    out.write(HEAD)
    for i in range(count):
        unit = UNIT if i % every == 0 else PLAIN
        out.write(unit.format(i=i, m=(i * 7) % 13 + 1))
    out.write("long use_all(int n) {\n    long s = 0;\n")
    for i in range(count):
        out.write("    s += use%d(n);\n" % i)
    out.write("    return s;\n}\n")


main()
