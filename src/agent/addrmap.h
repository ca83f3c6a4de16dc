/*
 * addrmap.h - which block lives at each address: the collector's table of
 * the program's live blocks (address -> allocating thread, serial, size,
 * stack). It grows with the program's live heap, so it is kept compact:
 * see addrmap.c for the layout and docs/DESIGN.md for the measurements.
 *
 * Not thread-safe: the collector calls it under mvz_agent.lock. Depends on
 * nothing but the kernel (mmap), so that unit tests can build it alone.
 */
#ifndef MVZ_AGENT_ADDRMAP_H
#define MVZ_AGENT_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

struct mvz_addr_block {
    uint32_t tid;    /* allocating thread */
    uint64_t serial; /* its allocation serial (below 2^40, the format's bound) */
    uint64_t size;
    uint32_t stack;
};

/* Maps the first memory the map will need (for blocks of thread tid), so
 * that a program that later uses up its address space is still traced. */
void mvz_addrmap_prepare(uint32_t tid);
/* Adds the block at addr, which must not be live. Returns 0, or -1 when
 * out of memory (the block is not added). */
int mvz_addrmap_add(uintptr_t addr, const struct mvz_addr_block *b);
/* The block at addr, left in place: 1, or 0 when none is live there. */
int mvz_addrmap_get(uintptr_t addr, struct mvz_addr_block *out);
/* Takes the block at addr out: 1 (with *out), or 0 when none is live there. */
int mvz_addrmap_take(uintptr_t addr, struct mvz_addr_block *out);
/* Brings the place of addr's entry into cache, for an event coming soon. */
void mvz_addrmap_prefetch(uintptr_t addr);
/* Forgets every block (a fork child starts afresh). */
void mvz_addrmap_clear(void);
/* Calls fn for every live block, in no particular order; fn must not
 * change the map. */
void mvz_addrmap_each(void (*fn)(void *ctx, uintptr_t addr, const struct mvz_addr_block *b),
                      void *ctx);

/* The same, in address order (a heap snapshot's copy); 0, or -1 when its
 * scratch memory cannot be mapped (fn was not called). */
int mvz_addrmap_each_ordered(void (*fn)(void *ctx, uintptr_t addr, const struct mvz_addr_block *b),
                             void *ctx);

struct mvz_addrmap_stats {
    size_t live;                  /* blocks */
    size_t spilled;               /* of which in the spill table (see addrmap.c) */
    size_t zones;                 /* 512 KiB address ranges with a table */
    size_t bytes;                 /* memory the map holds: tables, directory, slabs */
    size_t peak_live, peak_bytes; /* the most there were of each */
    size_t unmaps;                /* munmap calls (each a TLB shootdown for the program) */
};
void mvz_addrmap_stats(struct mvz_addrmap_stats *s);

#endif
