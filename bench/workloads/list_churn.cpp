// Workload "list": std::list churn in 2 threads.
// Each thread keeps a std::list of LIVE elements and does push_back/pop_front
// pairs (one node allocation and one node free each) until it has made
// TOTAL/2 allocations; every 64th element carries a heap-allocated std::string
// (two more allocations) so that other sites and sizes are exercised.
// usage: list_churn [TOTAL_ALLOCATIONS]   (default 6000000)
#include <cstdlib>
#include <list>
#include <string>
#include <thread>
#include <vector>

struct Item {
    long id;
    std::string *tag;
};

static long churn(long allocs, unsigned seed)
{
    std::list<Item> l;
    const long live = 2000;
    long made = 0, sum = 0;
    for (long i = 0; i < live; i++, made++)
        l.push_back(Item{i, nullptr});
    long i = live;
    while (made < allocs) {
        Item it{i, nullptr};
        if ((i & 63) == 0 && made + 3 <= allocs) {
            // two allocations: the string object and (too long for the
            // small-string optimisation) its character buffer
            it.tag = new std::string(40 + (seed % 7), 'x');
            made += 2;
        }
        l.push_back(it);
        made++;
        Item &f = l.front();
        sum += f.id;
        delete f.tag;
        l.pop_front();
        i++;
    }
    for (auto &x : l)
        delete x.tag;
    return sum;
}

int main(int argc, char **argv)
{
    long total = argc > 1 ? atol(argv[1]) : 6000000;
    std::vector<std::thread> ts;
    std::vector<long> res(2);
    for (int t = 0; t < 2; t++)
        ts.emplace_back([&, t] { res[t] = churn(total / 2, 1234u + t); });
    for (auto &t : ts)
        t.join();
    return (res[0] + res[1]) == 42 ? 1 : 0;
}
