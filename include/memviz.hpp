/*
 * memviz.hpp - C++ adapters for include/memviz.h.
 *
 *     std::unordered_map<std::string, Entry> cache;
 *     std::mutex cache_lock;
 *     memviz::watch_table("cache", cache, cache_lock);
 *
 * makes memviz read the table's fill every 100 ms (elements, buckets,
 * empty buckets, longest chain), under the program's own lock: memviz
 * reads it on a thread of its own, and a table the program changes
 * meanwhile must not be read without it. The table and the lock must
 * outlive the program's run (memviz reads them until the end). Without
 * memviz it does nothing.
 */
#ifndef MEMVIZ_HPP
#define MEMVIZ_HPP

#include <cstddef>
#include <mutex>

#include "memviz.h"

namespace memviz
{

template <class Table, class Lock> struct table_watch {
    const Table *table;
    Lock *lock;

    static void fill(void *ctx, memviz_table_stats *s)
    {
        auto *w = static_cast<table_watch *>(ctx);
        std::lock_guard<Lock> hold(*w->lock);
        s->elements = w->table->size();
        s->buckets = w->table->bucket_count();
        s->empty_buckets = 0;
        s->longest_chain = 0;
        for (std::size_t b = 0; b < s->buckets; b++) {
            std::size_t n = w->table->bucket_size(b);
            if (n == 0)
                s->empty_buckets++;
            if (n > s->longest_chain)
                s->longest_chain = n;
        }
    }
};

/* Watches an std::unordered_map, unordered_set (or any table with size,
 * bucket_count and bucket_size) under `lock`. */
template <class Table, class Lock>
void watch_table(const char *name, const Table &table, Lock &lock)
{
    auto *w = new table_watch<Table, Lock>{&table, &lock}; /* read until the end: never freed */
    memviz_table(name, &table_watch<Table, Lock>::fill, w);
}

} // namespace memviz

#endif
