/*
 * addrmap.c - the address table of the live blocks (addrmap.h), 12 bytes
 * an entry.
 *
 * Addresses are grouped in zones of 512 KiB (addr >> 19). A directory
 * (open addressing on the zone number) gives each zone that holds live
 * blocks a table of its own: a Robin Hood hash on the block's offset in the
 * zone, in 8-byte granules, which fits 16 bits. So an entry is
 *
 *   offset (16) | thread index + 1 (8) | serial (40) | size (12) | stack (20)
 *
 * The zone's bits are implied by its table and the thread by a small index
 * (255 threads with live blocks at once). A block that does not fit (an
 * address not 8-byte aligned, a size of 4 KiB or more, a stack id of 2^20
 * or more, no thread index left) goes to the spill table, whose 32-byte
 * entries hold everything: such blocks are large (the entry is under 1% of
 * the block) or rare.
 *
 * A zone's table grows by a quarter when it is 7/8 full, so tables are
 * 70-87% full. The program's allocator fills zones one after another, so
 * the map grows smoothly rather than doubling at once; the table of one
 * zone is at most 460 KiB, so a rehash never holds up the program's
 * threads for long. A table shrinks at a sixteenth full, and an emptied
 * zone lets its table go but keeps its size for the next one. Tables of up to 256 entries come from
 * slabs (a zone with a few live blocks costs a few hundred bytes, not a page); larger ones are
 * mapped.
 *
 * Invariants: an entry is empty iff its thread byte is 0. Robin Hood
 * order: along a table, an entry is never further from its home than the
 * entry before it is from its own plus one, so a search stops at the first
 * entry closer to its home than the searched offset would be. A thread
 * index i is in use by m.tids[i] iff m.tids[i] != 0, and tid_byte(tid) is
 * i + 1 for that tid and 0 for every tid that has no index.
 */
#include "agent/addrmap.h"

#include <string.h>
#include <sys/mman.h>

#ifdef MVZ_AGENT_MEM
#include "trace/buf.h" /* mvz_owned_map */
#else                  /* built alone by its unit test */
static void mvz_owned_map(const void *p, size_t len)
{
    (void)p, (void)len;
}
static void mvz_owned_unmap(const void *p, size_t len)
{
    (void)p, (void)len;
}
#endif

#define ZONE_SHIFT 19
#define GRAIN_SHIFT 3
#define SIZE_BITS 12
#define STACK_BITS 20
#define MAX_THREADS 255
#define TID_LIMIT (1u << 22) /* PID_MAX_LIMIT */
#define TID_PAGE_BITS 12

struct entry {
    uint16_t off;
    uint8_t thread1; /* thread index + 1; 0: empty */
    uint8_t serial_hi;
    uint32_t serial_lo;
    uint32_t size_stack; /* size << STACK_BITS | stack */
};
_Static_assert(sizeof(struct entry) == 12, "an entry is 12 bytes");

struct zone {
    uint64_t no1; /* zone number + 1; 0: an empty directory slot */
    struct entry *tab;
    uint32_t cap, used;
    uint16_t lo, hi;  /* the lowest and highest offsets added since the zone appeared */
    uint32_t hint;    /* the largest capacity its table had: an emptied zone's next table's */
    uint32_t spilled; /* blocks of the spill table whose address is in the zone */
};

struct spill {
    uint64_t addr; /* 0: empty */
    uint64_t serial, size;
    uint32_t stack, tid;
};

/* Slab classes: tables of 16 << c entries, c < NCLASS. */
#define NCLASS 5
#define SLAB_BYTES (64u << 10)
#define PAGE 4096u
/* Larger tables that were let go are kept for reuse, up to POOL_BYTES in
 * all: the tables a zone outgrows as it fills are the ones the next zone
 * will need, and a munmap costs the program's threads a TLB shootdown. */
#define POOL_PAGES 128u
#define POOL_BYTES (4u << 20)

static struct {
    struct zone *dir; /* dir_cap slots, at most half used */
    size_t dir_cap, nzones;
    size_t ntables; /* zones with a table (the others were emptied, or hold spilled blocks only) */
    size_t purged_at;  /* zones in the directory after its last purge */
    struct zone *last; /* the zone the latest lookup found; NULL after the directory changed */
    size_t live, spilled, bytes;
    size_t peak_live, peak_bytes;
    size_t unmaps;
    uint32_t tids[MAX_THREADS];
    uint64_t thread_live[MAX_THREADS];
    uint8_t *tid_pages[TID_LIMIT >> TID_PAGE_BITS];
    struct spill *sp; /* linear probing, at most half full */
    size_t sp_cap;
    void *free_tables[NCLASS];
    char *slab;
    size_t slab_left;
    void *
        pool[POOL_PAGES + 1]; /* by size in pages: tables let go, linked through their first word */
    size_t pool_bytes;
} m;

/* Populated at once: a table's first reads (a rehash probing for empty
 * slots) would map the shared zero page, and the writes after them fault
 * again and flush the TLBs of the program's threads (on the bulk bench,
 * those shootdowns were 7% of all samples). */
static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    mvz_owned_map(p, bytes);
    m.bytes += bytes;
    if (m.bytes > m.peak_bytes)
        m.peak_bytes = m.bytes;
    return p;
}

static void unmap(void *p, size_t bytes)
{
    munmap(p, bytes);
    mvz_owned_unmap(p, bytes);
    m.bytes -= bytes;
    m.unmaps++;
}

/* ---- table memory ---- */

static size_t table_bytes(uint32_t cap)
{
    return (size_t)cap * sizeof(struct entry);
}

static int slab_class(uint32_t cap)
{
    for (int c = 0; c < NCLASS; c++)
        if (cap == 16u << c)
            return c;
    return -1;
}

/* The capacity that follows cap as a table grows: doubling through the
 * slab classes, then a quarter more, in whole pages. */
static uint32_t next_cap(uint32_t cap)
{
    if (cap < 16u << (NCLASS - 1))
        return cap ? cap * 2 : 16;
    size_t bytes = (table_bytes(cap + cap / 4) + PAGE - 1) / PAGE * PAGE;
    return (uint32_t)(bytes / sizeof(struct entry));
}

/* The capacity z's table grows to. A zone the allocator fills in address
 * order (carving fresh memory) ends with about used * 65536 / span blocks
 * (span: the offsets it has seen): it grows to that at once, up to twice
 * its size, instead of a quarter at a time through a dozen rehashes
 * (4 M blocks allocated in a row: 1.27 s -> 0.7 s). Elsewhere the estimate
 * is about `used`, and the table grows by a quarter. */
static uint32_t grow_cap(const struct zone *z)
{
    uint32_t cap = next_cap(z->cap);
    if (slab_class(cap) >= 0)
        return cap;
    uint64_t span = (uint64_t)z->hi - z->lo + 1;
    uint64_t want = (uint64_t)z->used * 65536 / span * 8 / 7 + 1;
    if (want > 2 * (uint64_t)z->cap)
        want = 2 * (uint64_t)z->cap;
    if (want <= cap)
        return cap;
    size_t bytes = (table_bytes((uint32_t)want) + PAGE - 1) / PAGE * PAGE;
    return (uint32_t)(bytes / sizeof(struct entry));
}

/* A table with room for cap entries (a capacity next_cap gives), zeroed. */
static struct entry *table_alloc(uint32_t cap)
{
    int c = slab_class(cap);
    if (c < 0) {
        size_t bytes = (table_bytes(cap) + PAGE - 1) / PAGE * PAGE, pages = bytes / PAGE;
        void *t = pages <= POOL_PAGES ? m.pool[pages] : NULL;
        if (!t)
            return map(bytes);
        m.pool[pages] = *(void **)t;
        m.pool_bytes -= bytes;
        return memset(t, 0, bytes);
    }
    void *t = m.free_tables[c];
    if (t) {
        m.free_tables[c] = *(void **)t;
        return memset(t, 0, table_bytes(cap));
    }
    size_t need = table_bytes(cap);
    if (m.slab_left < need) {
        if (!(m.slab = map(SLAB_BYTES)))
            return NULL;
        m.slab_left = SLAB_BYTES; /* the rest of the old slab stays unused */
    }
    t = m.slab;
    m.slab += need;
    m.slab_left -= need;
    return t; /* fresh mapped memory is zero */
}

static void table_free(struct entry *t, uint32_t cap)
{
    int c = slab_class(cap);
    if (c < 0) {
        size_t bytes = (table_bytes(cap) + PAGE - 1) / PAGE * PAGE, pages = bytes / PAGE;
        if (pages > POOL_PAGES || m.pool_bytes + bytes > POOL_BYTES) {
            unmap(t, bytes);
            return;
        }
        *(void **)t = m.pool[pages];
        m.pool[pages] = t;
        m.pool_bytes += bytes;
        return;
    }
    *(void **)t = m.free_tables[c];
    m.free_tables[c] = t;
}

/* ---- a zone's table: Robin Hood hashing on the offset ---- */

static uint32_t home(uint16_t off, uint32_t cap)
{
    return (uint32_t)(((uint64_t)(uint32_t)(off * 0x9E3779B1u) * cap) >> 32);
}

static uint32_t dist(uint32_t pos, uint32_t h, uint32_t cap)
{
    return pos >= h ? pos - h : pos + cap - h;
}

/* Position of off in z's table, or -1. */
static int64_t rh_find(const struct zone *z, uint16_t off)
{
    uint32_t cap = z->cap, pos = home(off, cap);
    for (uint32_t d = 0;; d++) {
        const struct entry *e = &z->tab[pos];
        if (!e->thread1 || dist(pos, home(e->off, cap), cap) < d)
            return -1;
        if (e->off == off)
            return pos;
        if (++pos == cap)
            pos = 0;
    }
}

/* Places e, whose offset is not in the table, which has room. */
static void rh_place(struct entry *tab, uint32_t cap, struct entry e)
{
    uint32_t pos = home(e.off, cap);
    for (uint32_t d = 0;; d++) {
        struct entry *o = &tab[pos];
        if (!o->thread1) {
            *o = e;
            return;
        }
        uint32_t od = dist(pos, home(o->off, cap), cap);
        if (od < d) {
            struct entry t = *o;
            *o = e;
            e = t;
            d = od;
        }
        if (++pos == cap)
            pos = 0;
    }
}

/* Empties position pos, shifting the entries after it back. */
static void rh_remove(struct zone *z, uint32_t pos)
{
    uint32_t cap = z->cap;
    for (;;) {
        uint32_t next = pos + 1 == cap ? 0 : pos + 1;
        struct entry *n = &z->tab[next];
        if (!n->thread1 || home(n->off, cap) == next) {
            z->tab[pos].thread1 = 0;
            return;
        }
        z->tab[pos] = *n;
        pos = next;
    }
}

/* Moves z's entries into a table of capacity cap. -1 when out of memory
 * (z is unchanged). */
static int rehash(struct zone *z, uint32_t cap)
{
    struct entry *t = table_alloc(cap);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < z->cap; i++)
        if (z->tab[i].thread1)
            rh_place(t, cap, z->tab[i]);
    if (z->tab)
        table_free(z->tab, z->cap);
    z->tab = t;
    z->cap = cap;
    if (cap > z->hint)
        z->hint = cap;
    return 0;
}

/* ---- the zone directory ---- */

static size_t dir_slot(uint64_t no, size_t cap)
{
    return (size_t)((no * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int dir_grow(void)
{
    size_t cap = m.dir_cap ? m.dir_cap * 2 : 64;
    struct zone *d = map(cap * sizeof(*d));
    if (!d)
        return -1;
    for (size_t i = 0; i < m.dir_cap; i++) {
        if (!m.dir[i].no1)
            continue;
        size_t j = dir_slot(m.dir[i].no1 - 1, cap);
        while (d[j].no1)
            j = (j + 1) & (cap - 1);
        d[j] = m.dir[i];
    }
    if (m.dir)
        unmap(m.dir, m.dir_cap * sizeof(*m.dir));
    m.dir = d;
    m.dir_cap = cap;
    m.last = NULL;
    return 0;
}

/* Zone no, or NULL when it has no table (create: a new empty zone, NULL
 * only when out of memory). */
static struct zone *zone_find(uint64_t no, int create)
{
    if (m.last && m.last->no1 == no + 1)
        return m.last;
    if (!m.dir_cap) {
        if (!create || dir_grow() < 0)
            return NULL;
    }
    size_t j = dir_slot(no, m.dir_cap);
    while (m.dir[j].no1 && m.dir[j].no1 != no + 1)
        j = (j + 1) & (m.dir_cap - 1);
    if (m.dir[j].no1)
        return m.last = &m.dir[j];
    if (!create)
        return NULL;
    if (2 * (m.nzones + 1) > m.dir_cap) {
        if (dir_grow() < 0)
            return NULL;
        return zone_find(no, create);
    }
    m.dir[j] = (struct zone){.no1 = no + 1};
    m.nzones++;
    return m.last = &m.dir[j];
}

/* Drops zone z, which has no live block, from the directory. */
static void zone_drop(struct zone *z)
{
    if (z->tab)
        table_free(z->tab, z->cap);
    size_t i = (size_t)(z - m.dir), mask = m.dir_cap - 1;
    for (size_t j = (i + 1) & mask; m.dir[j].no1; j = (j + 1) & mask) {
        size_t h = dir_slot(m.dir[j].no1 - 1, m.dir_cap);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            m.dir[i] = m.dir[j];
            i = j;
        }
    }
    m.dir[i] = (struct zone){0};
    m.nzones--;
    m.last = NULL;
}

/* ---- thread indexes ---- */

static uint8_t *tid_byte(uint32_t tid, int create)
{
    uint8_t **page = &m.tid_pages[tid >> TID_PAGE_BITS];
    if (!*page && (!create || !(*page = map(1u << TID_PAGE_BITS))))
        return NULL;
    return &(*page)[tid & ((1u << TID_PAGE_BITS) - 1)];
}

/* tid's index, given one if it has none: -1 when all are taken by threads
 * with live blocks (or out of memory). */
static int thread_index(uint32_t tid)
{
    if (tid >= TID_LIMIT)
        return -1;
    uint8_t *b = tid_byte(tid, 1);
    if (!b)
        return -1;
    if (*b)
        return *b - 1;
    for (int i = 0; i < MAX_THREADS; i++) {
        if (m.tids[i] && m.thread_live[i])
            continue;
        if (m.tids[i])
            *tid_byte(m.tids[i], 0) = 0; /* its thread has no live block left */
        m.tids[i] = tid;
        *b = (uint8_t)(i + 1);
        return i;
    }
    return -1;
}

/* ---- the spill table ---- */

static size_t spill_slot(uint64_t addr, size_t cap)
{
    return (size_t)((addr >> 3) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static struct spill *spill_find(uint64_t addr)
{
    if (!m.sp_cap)
        return NULL;
    size_t j = spill_slot(addr, m.sp_cap);
    while (m.sp[j].addr && m.sp[j].addr != addr)
        j = (j + 1) & (m.sp_cap - 1);
    return m.sp[j].addr ? &m.sp[j] : NULL;
}

static int spill_grow(void)
{
    size_t cap = m.sp_cap ? m.sp_cap * 2 : 256;
    struct spill *t = map(cap * sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < m.sp_cap; i++) {
        if (!m.sp[i].addr)
            continue;
        size_t j = spill_slot(m.sp[i].addr, cap);
        while (t[j].addr)
            j = (j + 1) & (cap - 1);
        t[j] = m.sp[i];
    }
    if (m.sp)
        unmap(m.sp, m.sp_cap * sizeof(*m.sp));
    m.sp = t;
    m.sp_cap = cap;
    return 0;
}

/* A spilled block counts in its address's zone, so that a lookup in a
 * zone without spilled blocks skips the spill table: on mt (blocks of 16 B
 * to 1 MiB) every lookup probed it, a cache miss, whenever any block was
 * spilled. */
static int spill_add(uintptr_t addr, const struct mvz_addr_block *b)
{
    struct zone *z = zone_find(addr >> ZONE_SHIFT, 1);
    if (!z || (2 * (m.spilled + 1) > m.sp_cap && spill_grow() < 0))
        return -1;
    z->spilled++;
    size_t j = spill_slot(addr, m.sp_cap);
    while (m.sp[j].addr)
        j = (j + 1) & (m.sp_cap - 1);
    m.sp[j] = (struct spill){addr, b->serial, b->size, b->stack, b->tid};
    m.spilled++;
    if (++m.live > m.peak_live)
        m.peak_live = m.live;
    return 0;
}

/* e's zone is z. */
static void spill_remove(struct zone *z, struct spill *e)
{
    z->spilled--;
    size_t i = (size_t)(e - m.sp), mask = m.sp_cap - 1;
    for (size_t j = (i + 1) & mask; m.sp[j].addr; j = (j + 1) & mask) {
        size_t h = spill_slot(m.sp[j].addr, m.sp_cap);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            m.sp[i] = m.sp[j];
            i = j;
        }
    }
    m.sp[i].addr = 0;
    m.spilled--;
    m.live--;
}

/* ---- the interface ---- */

static int fits(uintptr_t addr, const struct mvz_addr_block *b)
{
    return !(addr & ((1u << GRAIN_SHIFT) - 1)) && b->size < (1u << SIZE_BITS) &&
           b->stack < (1u << STACK_BITS);
}

void mvz_addrmap_prepare(uint32_t tid)
{
    if (!m.dir_cap)
        dir_grow();
    if (!m.slab_left && (m.slab = map(SLAB_BYTES)))
        m.slab_left = SLAB_BYTES;
    if (!m.sp_cap)
        spill_grow();
    if (tid < TID_LIMIT)
        tid_byte(tid, 1);
}

int mvz_addrmap_add(uintptr_t addr, const struct mvz_addr_block *b)
{
    int ti = fits(addr, b) ? thread_index(b->tid) : -1;
    struct zone *z = ti >= 0 ? zone_find(addr >> ZONE_SHIFT, 1) : NULL;
    uint16_t off = (uint16_t)((addr >> GRAIN_SHIFT) & 0xffff);
    if (z && !z->cap) { /* a new zone, or one that was emptied: its old size */
        z->lo = z->hi = off;
        if (rehash(z, z->hint ? z->hint : next_cap(0)) < 0)
            z = NULL;
        else
            m.ntables++;
    } else if (z && 8 * (z->used + 1) > 7 * (uint64_t)z->cap && rehash(z, grow_cap(z)) < 0) {
        z = NULL;
    }
    if (!z)
        return spill_add(addr, b);
    z->lo = off < z->lo ? off : z->lo;
    z->hi = off > z->hi ? off : z->hi;
    struct entry e = {
        .off = off,
        .thread1 = (uint8_t)(ti + 1),
        .serial_hi = (uint8_t)(b->serial >> 32),
        .serial_lo = (uint32_t)b->serial,
        .size_stack = (uint32_t)(b->size << STACK_BITS | b->stack),
    };
    rh_place(z->tab, z->cap, e);
    z->used++;
    if (++m.live > m.peak_live)
        m.peak_live = m.live;
    m.thread_live[ti]++;
    return 0;
}

static void decode(const struct entry *e, struct mvz_addr_block *out)
{
    out->tid = m.tids[e->thread1 - 1];
    out->serial = (uint64_t)e->serial_hi << 32 | e->serial_lo;
    out->size = e->size_stack >> STACK_BITS;
    out->stack = e->size_stack & ((1u << STACK_BITS) - 1);
}

/* Drops the zones that have no table from the directory, when they are
 * many: a program that maps and unmaps memory all over its address space
 * would otherwise leave one behind for every zone it ever used. */
static void zones_purge(void)
{
    if (m.nzones - m.ntables <= m.ntables + 1024 || m.nzones <= 2 * m.purged_at)
        return; /* (zones of spilled blocks stay: not scanned for again and again) */
    for (size_t i = 0; i < m.dir_cap;) {
        if (m.dir[i].no1 && !m.dir[i].cap && !m.dir[i].spilled)
            zone_drop(&m.dir[i]); /* moves a later entry here, or empties it */
        else
            i++;
    }
    m.purged_at = m.nzones;
}

/* A table far emptier than it has to be gives memory back: at a sixteenth
 * full it is rebuilt half full; an empty zone's table goes, and the zone
 * keeps its largest table's size for when it fills again. Programs that allocate
 * a batch, free it all and start over (the sweep's small live sets, a
 * server's requests) did the whole regrowth every time: 10,000 live
 * blocks cost 82 ns an event against 46 at 1 M when tables shrank at a
 * quarter and empty zones went; now 53 against 41. */
static void zone_shrink(struct zone *z)
{
    if (!z->used) {
        table_free(z->tab, z->cap);
        z->tab = NULL;
        z->cap = 0;
        m.ntables--;
        zones_purge();
        return;
    }
    if (z->cap <= 16 || 16 * (uint64_t)z->used >= z->cap)
        return;
    uint32_t cap = 16;
    while (cap < 2 * z->used)
        cap = next_cap(cap);
    if (cap < z->cap)
        rehash(z, cap); /* out of memory: it stays as it is */
}

/* Invariant: every live block's zone is in the directory (its table holds
 * it, or its spilled count counts it). */
static int lookup(uintptr_t addr, struct mvz_addr_block *out, int take)
{
    struct zone *z = zone_find(addr >> ZONE_SHIFT, 0);
    if (!z)
        return 0;
    if (!(addr & ((1u << GRAIN_SHIFT) - 1))) {
        int64_t pos = z->cap ? rh_find(z, (uint16_t)((addr >> GRAIN_SHIFT) & 0xffff)) : -1;
        if (pos >= 0) {
            struct entry *e = &z->tab[pos];
            decode(e, out);
            if (take) {
                m.thread_live[e->thread1 - 1]--;
                rh_remove(z, (uint32_t)pos);
                z->used--;
                m.live--;
                zone_shrink(z);
            }
            return 1;
        }
    }
    struct spill *s = z->spilled ? spill_find(addr) : NULL;
    if (!s)
        return 0;
    *out = (struct mvz_addr_block){
        .tid = s->tid, .serial = s->serial, .size = s->size, .stack = s->stack};
    if (take)
        spill_remove(z, s);
    return 1;
}

int mvz_addrmap_get(uintptr_t addr, struct mvz_addr_block *out)
{
    return lookup(addr, out, 0);
}

int mvz_addrmap_take(uintptr_t addr, struct mvz_addr_block *out)
{
    return lookup(addr, out, 1);
}

/* Both places a block may be, as far as its zone tells. */
void mvz_addrmap_prefetch(uintptr_t addr)
{
    uint64_t no1 = (addr >> ZONE_SHIFT) + 1;
    const struct zone *z = m.last;
    if (!z || z->no1 != no1) {
        if (!m.dir_cap)
            return;
        size_t j = dir_slot(no1 - 1, m.dir_cap);
        while (m.dir[j].no1 && m.dir[j].no1 != no1)
            j = (j + 1) & (m.dir_cap - 1);
        z = &m.dir[j];
    }
    if (z->no1 != no1)
        return;
    if (z->cap)
        __builtin_prefetch(&z->tab[home((uint16_t)((addr >> GRAIN_SHIFT) & 0xffff), z->cap)]);
    if (z->spilled)
        __builtin_prefetch(&m.sp[spill_slot(addr, m.sp_cap)]);
}

void mvz_addrmap_clear(void)
{
    for (size_t i = 0; i < m.dir_cap; i++)
        if (m.dir[i].no1 && m.dir[i].tab)
            table_free(m.dir[i].tab, m.dir[i].cap);
    if (m.dir)
        memset(m.dir, 0, m.dir_cap * sizeof(*m.dir));
    m.nzones = m.ntables = m.purged_at = 0;
    m.last = NULL;
    for (int i = 0; i < MAX_THREADS; i++) {
        if (m.tids[i])
            *tid_byte(m.tids[i], 0) = 0;
        m.tids[i] = 0;
        m.thread_live[i] = 0;
    }
    if (m.sp)
        memset(m.sp, 0, m.sp_cap * sizeof(*m.sp));
    m.live = m.spilled = 0;
}

void mvz_addrmap_each(void (*fn)(void *ctx, uintptr_t addr, const struct mvz_addr_block *b),
                      void *ctx)
{
    struct mvz_addr_block b;
    for (size_t i = 0; i < m.dir_cap; i++) {
        const struct zone *z = &m.dir[i];
        for (uint32_t j = 0; z->no1 && j < z->cap; j++) {
            if (!z->tab[j].thread1)
                continue;
            decode(&z->tab[j], &b);
            fn(ctx, (uintptr_t)(z->no1 - 1) << ZONE_SHIFT | (uintptr_t)z->tab[j].off << GRAIN_SHIFT,
               &b);
        }
    }
    for (size_t i = 0; i < m.sp_cap; i++) {
        const struct spill *s = &m.sp[i];
        if (!s->addr)
            continue;
        b = (struct mvz_addr_block){s->tid, s->serial, s->size, s->stack};
        fn(ctx, s->addr, &b);
    }
}

/* ---- every block in address order (a heap snapshot's) ----
 * Zones in number order, each zone's entries by offset (a two-pass radix
 * sort: offsets are 16 bits), merged with the spill table's blocks sorted
 * by address. Scratch memory is mapped here and let go at the end. */
struct kref {
    uint64_t key;
    size_t at;
};

static void kref_sift(struct kref *a, size_t n, size_t i)
{
    for (;;) {
        size_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < n && a[l].key > a[big].key)
            big = l;
        if (r < n && a[r].key > a[big].key)
            big = r;
        if (big == i)
            return;
        struct kref t = a[i];
        a[i] = a[big];
        a[big] = t;
        i = big;
    }
}

static void kref_sort(struct kref *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        kref_sift(a, n, i);
    for (size_t k = n; k-- > 1;) {
        struct kref t = a[0];
        a[0] = a[k];
        a[k] = t;
        kref_sift(a, k, 0);
    }
}

static void *scratch(size_t bytes)
{
    void *p =
        mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void unscratch(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes ? bytes : 1);
}

/* The live entries of zone z by offset, into out (tmp: as large). */
static size_t zone_sorted(const struct zone *z, struct kref *out, struct kref *tmp)
{
    size_t n = 0;
    for (uint32_t j = 0; j < z->cap; j++)
        if (z->tab[j].thread1)
            out[n++] = (struct kref){z->tab[j].off, j};
    struct kref *from = out, *to = tmp;
    for (int shift = 0; shift < 16; shift += 8) { /* LSD radix, 8 bits a pass */
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((from[i].key >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            to[count[(from[i].key >> shift) & 255]++] = from[i];
        struct kref *t = from;
        from = to;
        to = t;
    }
    return n; /* two passes: the sorted entries are back in `out` */
}

int mvz_addrmap_each_ordered(void (*fn)(void *ctx, uintptr_t addr, const struct mvz_addr_block *b),
                             void *ctx)
{
    size_t nz = 0, ns = 0, most = 0;
    for (size_t i = 0; i < m.dir_cap; i++)
        if (m.dir[i].no1 && m.dir[i].tab) {
            nz++;
            most = m.dir[i].cap > most ? m.dir[i].cap : most;
        }
    for (size_t i = 0; i < m.sp_cap; i++)
        ns += m.sp[i].addr != 0;
    struct kref *zones = scratch(nz * sizeof(*zones)), *spills = scratch(ns * sizeof(*spills));
    struct kref *ents = scratch(most * sizeof(*ents)), *tmp = scratch(most * sizeof(*tmp));
    int ok = zones && spills && ents && tmp;
    if (ok) {
        nz = ns = 0;
        for (size_t i = 0; i < m.dir_cap; i++)
            if (m.dir[i].no1 && m.dir[i].tab)
                zones[nz++] = (struct kref){m.dir[i].no1 - 1, i};
        for (size_t i = 0; i < m.sp_cap; i++)
            if (m.sp[i].addr)
                spills[ns++] = (struct kref){m.sp[i].addr, i};
        kref_sort(zones, nz);
        kref_sort(spills, ns);
        size_t s = 0;
        struct mvz_addr_block b;
        for (size_t k = 0; k < nz; k++) {
            const struct zone *z = &m.dir[zones[k].at];
            size_t n = zone_sorted(z, ents, tmp);
            for (size_t e = 0; e < n; e++) {
                uintptr_t addr = (uintptr_t)zones[k].key << ZONE_SHIFT | (uintptr_t)ents[e].key
                                                                             << GRAIN_SHIFT;
                for (; s < ns && spills[s].key < addr; s++) {
                    const struct spill *sp = &m.sp[spills[s].at];
                    b = (struct mvz_addr_block){sp->tid, sp->serial, sp->size, sp->stack};
                    fn(ctx, sp->addr, &b);
                }
                decode(&z->tab[ents[e].at], &b);
                fn(ctx, addr, &b);
            }
        }
        for (; s < ns; s++) {
            const struct spill *sp = &m.sp[spills[s].at];
            b = (struct mvz_addr_block){sp->tid, sp->serial, sp->size, sp->stack};
            fn(ctx, sp->addr, &b);
        }
    }
    unscratch(zones, nz * sizeof(*zones));
    unscratch(spills, ns * sizeof(*spills));
    unscratch(ents, most * sizeof(*ents));
    unscratch(tmp, most * sizeof(*tmp));
    return ok ? 0 : -1;
}

void mvz_addrmap_stats(struct mvz_addrmap_stats *s)
{
    s->live = m.live;
    s->spilled = m.spilled;
    s->zones = m.ntables;
    s->bytes = m.bytes;
    s->peak_live = m.peak_live;
    s->peak_bytes = m.peak_bytes;
    s->unmaps = m.unmaps;
}
