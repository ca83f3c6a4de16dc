// tablewatch - include/memviz.hpp's table adapter and a polled value.
//
// Fills an std::unordered_map<int, int> with 1,000 entries under a mutex,
// watched as "cache" (memviz::watch_table), and registers the polled value
// "answer" (42); waits 400 ms so that memviz reads them a few times; prints
// the table's elements, bucket count, empty buckets and longest chain, as
// the program sees them: what memviz must have read. Runs without memviz
// too (linked with the stub library).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "../../include/memviz.hpp"

static std::unordered_map<int, int> cache;
static std::mutex cache_lock;

static int64_t answer(void *)
{
    return 42;
}

int main()
{
    {
        std::lock_guard<std::mutex> hold(cache_lock);
        for (int i = 0; i < 1000; i++)
            cache[i * 7] = i;
    }
    memviz::watch_table("cache", cache, cache_lock);
    memviz_value_poll("answer", answer, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    std::lock_guard<std::mutex> hold(cache_lock);
    size_t empty = 0, longest = 0;
    for (size_t b = 0; b < cache.bucket_count(); b++) {
        empty += cache.bucket_size(b) == 0;
        longest = cache.bucket_size(b) > longest ? cache.bucket_size(b) : longest;
    }
    std::printf("%zu %zu %zu %zu\n", cache.size(), cache.bucket_count(), empty, longest);
    return 0;
}
