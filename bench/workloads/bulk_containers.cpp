// Workload "bulk": containers built whole and destroyed whole.
// Each round builds, one after the other, a std::map<long, long> of
// ELEMENTS nodes (keys inserted in a scrambled order), a
// std::vector<std::string> of ELEMENTS strings of 16-22 characters (one heap
// buffer each: too long for the small-string optimisation; the vector grows
// by doubling, no reserve) and a std::list<long> of ELEMENTS nodes, reads
// them all, then destroys all three (list, vector, map: the map frees its
// nodes in tree order, not in allocation order). So every block is freed in
// bulk, hundreds of thousands of allocations after its allocation, and about
// 3*ELEMENTS blocks are live at the peak of each round.
// usage: bulk_containers [ELEMENTS [ROUNDS]]   (defaults 300000, 5)
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <string>
#include <vector>

static long round_(long n, long r)
{
    long sum = 0;
    std::map<long, long> m;
    std::vector<std::string> v;
    std::list<long> l;
    // a bijection of [0, n) when n is not a multiple of 7919 (a prime)
    long step = (n % 7919) ? 7919 : 7907;
    for (long i = 0; i < n; i++)
        m.emplace((i * step + r) % n, i);
    for (long i = 0; i < n; i++) {
        char buf[48];
        int len = snprintf(buf, sizeof buf, "element-number-%ld", i + r);
        v.emplace_back(buf, (size_t)len);
    }
    for (long i = 0; i < n; i++)
        l.push_back(i ^ r);
    for (auto &kv : m)
        sum += kv.first - kv.second;
    for (auto &s : v)
        sum += (long)s.size() + s[s.size() - 1];
    for (long x : l)
        sum += x;
    return sum; // l, v, m destroyed here, whole
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 300000;
    long rounds = argc > 2 ? atol(argv[2]) : 5;
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: bulk_containers [ELEMENTS [ROUNDS]]\n");
        return 2;
    }
    long sum = 0;
    for (long r = 0; r < rounds; r++)
        sum += round_(n, r);
    printf("%ld\n", sum);
    return 0;
}
