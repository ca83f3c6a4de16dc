/*
 * scan.c - the copy's side of a heap snapshot (snapshot.h): runs in a
 * clone of the process made at the snapshot's moment, reads its own memory
 * (a frozen copy of the program's) and writes the snapshot into the trace:
 * the live blocks, the pointers found in each block, and the pointers found
 * in each root region (docs/FORMAT.md, docs/SNAPSHOTS.md).
 *
 * The copy has one thread and the locks of a moment it did not choose, so
 * it never calls malloc, stdio or the dynamic loader: its memory is mapped
 * here, its files are read with plain system calls, and a page it cannot
 * read (a guard page, a file mapping past its end) is skipped and counted,
 * from a SIGSEGV or SIGBUS handler.
 *
 * The scan is conservative: every aligned 8-byte word whose value lies in
 * a live block is a pointer to it, at its start or inside it.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/addrmap.h"
#include "agent/agent.h"
#include "agent/snapshot.h"

#define RECORD_FLUSH (1u << 20) /* a record being built goes out at this size */
/* Anonymous mappings larger than this are not scanned: sanitizers' shadow
 * memory (terabytes, mapped MAP_NORESERVE) holds no pointers, and finding
 * the few pages of it in memory costs a look at every page. */
#define MAPPING_MAX (64ull << 30)
#define BLOCKS_PER_RECORD 65536u
#define PAGE 4096u

struct sblock {
    uintptr_t addr;
    uint64_t size, serial;
    uint32_t tid, stack;
    uint32_t flags; /* MVZ_SNAP_BLOCK_* */
};

struct range {
    uintptr_t lo, hi;
};

struct vma {
    uintptr_t lo, hi;
    char perms[5];
    int anon;       /* no file */
    int done;       /* scanned already: a stopped thread's stack or TLS */
    char path[256]; /* "" for anonymous memory */
};

static struct {
    const struct mvz_scan_params *p;
    struct sblock *b;
    size_t n;
    uintptr_t lo, hi; /* from the lowest block's start to the highest block's end */
    struct range *own;
    size_t nown, own_cap;
    struct vma *v;
    size_t nv;
    struct mvz_chunk_writer w;
    struct mvz_buf rec;
    uint64_t edges, root_edges, regions, scanned, unreadable, too_large;
    sigjmp_buf jb;
    volatile int guarded;
    int debug; /* MEMVIZ_SCAN_DEBUG: each root region with pointers, on stderr */
} S;

/* ---- memory of our own: mapped, never malloc ---- */
static void *map(size_t bytes)
{
    void *p =
        mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

__attribute__((noreturn)) static void quit(int code)
{
    syscall(SYS_exit_group, code);
    __builtin_unreachable();
}

static void on_fault(int sig)
{
    if (S.guarded)
        siglongjmp(S.jb, 1);
    signal(sig, SIG_DFL);
    quit(128 + sig);
}

/* Only a fault may interrupt the scan: the program's handlers are the
 * program's, and a ^C for its process group is not for the copy. */
static void signals_for_scan(void)
{
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigprocmask(SIG_SETMASK, &all, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* ---- the blocks, by address ---- */
static void add_block(void *ctx, uintptr_t addr, const struct mvz_addr_block *b)
{
    size_t *cap = ctx;
    if (S.n < *cap)
        S.b[S.n++] = (struct sblock){addr, b->size, b->serial, b->tid, b->stack, 0};
}

static int collect_blocks(void)
{
    struct mvz_addrmap_stats st;
    mvz_addrmap_stats(&st);
    size_t cap = st.live;
    if (!(S.b = map(cap * sizeof(*S.b))))
        return -1;
    if (mvz_addrmap_each_ordered(add_block, &cap) < 0)
        return -1; /* no memory to order them: no snapshot */
    if (S.n) {
        S.lo = S.b[0].addr;
        for (size_t i = 0; i < S.n; i++)
            if (S.b[i].addr + S.b[i].size + 1 > S.hi)
                S.hi = S.b[i].addr + S.b[i].size + 1;
    }
    return 0;
}

/* The block v points into, or -1; *interior when not at its start. */
static long find_block(uintptr_t v, int *interior)
{
    if (v < S.lo || v >= S.hi)
        return -1;
    size_t lo = 0, hi = S.n; /* the last block starting at or below v */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (S.b[mid].addr <= v)
            lo = mid;
        else
            hi = mid;
    }
    const struct sblock *b = &S.b[lo];
    if (v == b->addr) {
        *interior = 0;
        return (long)lo;
    }
    if (v > b->addr && v < b->addr + b->size) {
        *interior = 1;
        return (long)lo;
    }
    return -1;
}

static void mark_ignored(void *ctx, uintptr_t addr)
{
    (void)ctx;
    int interior;
    long b = find_block(addr, &interior);
    if (b >= 0 && !interior)
        S.b[b].flags |= MVZ_SNAP_BLOCK_IGNORED;
}

/* ---- the agent's own memory, left out of the roots ---- */
static void add_own(void *ctx, uintptr_t start, size_t len)
{
    (void)ctx;
    if (S.nown == S.own_cap)
        return;
    S.own[S.nown++] = (struct range){start, (start + len + PAGE - 1) & ~(uintptr_t)(PAGE - 1)};
}

static void collect_own(void)
{
    S.own_cap = 1 << 16;
    if (!(S.own = map(S.own_cap * sizeof(*S.own))))
        return;
    mvz_owned_each(add_own, NULL);
    for (size_t i = 1; i < S.nown; i++) /* insertion sort: nearly sorted or small */
        for (size_t j = i; j > 0 && S.own[j - 1].lo > S.own[j].lo; j--) {
            struct range t = S.own[j];
            S.own[j] = S.own[j - 1];
            S.own[j - 1] = t;
        }
}

/* ---- records ---- */
static void put_record(uint8_t kind)
{
    mvz_cw_record(&S.w, kind, &S.rec);
    S.rec.len = 0;
    if (S.w.queued.raw.len >= MVZ_CW_FLUSH_AT)
        mvz_cw_flush(&S.w);
}

static void write_header(void)
{
    const struct mvz_scan_params *p = S.p;
    mvz_put_uvarint(&S.rec, p->id);
    mvz_put_uvarint(&S.rec, p->trigger);
    mvz_put_uvarint(&S.rec, p->ts);
    mvz_put_str(&S.rec, p->name);
    mvz_put_uvarint(&S.rec, p->events);
    mvz_put_uvarint(&S.rec, p->tid);
    mvz_put_uvarint(&S.rec, p->threads_running);
    mvz_put_uvarint(&S.rec, S.n);
    put_record(MVZ_REC_SNAPSHOT);
}

static void write_blocks(void)
{
    for (size_t first = 0; first < S.n; first += BLOCKS_PER_RECORD) {
        size_t count = S.n - first < BLOCKS_PER_RECORD ? S.n - first : BLOCKS_PER_RECORD;
        mvz_put_uvarint(&S.rec, S.p->id);
        mvz_put_uvarint(&S.rec, first);
        mvz_put_uvarint(&S.rec, count);
        uintptr_t prev = first ? S.b[first - 1].addr : 0;
        for (size_t i = first; i < first + count; i++) {
            const struct sblock *b = &S.b[i];
            mvz_put_uvarint(&S.rec, b->addr - prev);
            mvz_put_uvarint(&S.rec, b->size);
            mvz_put_uvarint(&S.rec, b->tid);
            mvz_put_uvarint(&S.rec, b->serial);
            mvz_put_uvarint(&S.rec, b->stack);
            mvz_put_uvarint(&S.rec, b->flags);
            prev = b->addr;
        }
        put_record(MVZ_REC_SNAPSHOT_BLOCKS);
    }
}

/* ---- reading memory that may not be there ---- */

/* ---- memcheck's heuristics for interior pointers ----
 * Each names a layout in which a pointer into a block is the program's
 * real pointer to it; memcheck applies all four by default (valgrind
 * 3.19's --leak-check-heuristics=all), in this order, with these tests. */

/* A word of the block, read only when it lies inside it. */
static int block_word(const struct sblock *b, uint64_t off, uintptr_t *out)
{
    if (off + 8 > b->size)
        return 0;
    *out = *(const volatile uintptr_t *)(b->addr + off);
    return 1;
}

/* Whether a is in read-only, non-executable data of a module (vtables are
 * in .data.rel.ro), from the memory map read at the start. */
static int in_module_rodata(uintptr_t a)
{
    if (a < PAGE || (a & 7))
        return 0;
    size_t lo = 0, hi = S.nv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S.v[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct vma *v = lo < S.nv ? &S.v[lo] : NULL;
    return v && v->lo <= a && !v->anon && v->path[0] == '/' && v->perms[0] == 'r' &&
           v->perms[1] == '-' && v->perms[2] == '-';
}

static int heuristic(uintptr_t v, const struct sblock *b)
{
    uint64_t off = v - b->addr;
    uintptr_t w0, w1, inner;
    /* libstdc++'s reference-counted std::string: length, capacity,
     * refcount, then the characters the pointer points at */
    if (off == 24 && block_word(b, 8, &w1) && 24 + w1 + 1 == b->size && block_word(b, 0, &w0) &&
        w0 <= w1)
        return MVZ_EDGE_STDSTRING;
    /* a 64-bit length, then the data: a length-prefixed buffer */
    if (off == 8 && block_word(b, 0, &w0) && w0 > 0 && b->size - 8 == w0)
        return MVZ_EDGE_LENGTH64;
    /* new[] of objects with a destructor: the element count, then them */
    if (off == 8 && block_word(b, 0, &w0) && w0 > 0 && (b->size - 8) % w0 == 0)
        return MVZ_EDGE_NEWARRAY;
    /* a pointer to a second base class: both it and the block start with
     * a vtable pointer */
    if (!(v & 7) && block_word(b, off, &inner) && block_word(b, 0, &w0) &&
        in_module_rodata(inner) && in_module_rodata(w0))
        return MVZ_EDGE_MULTIPLEINHERITANCE;
    return MVZ_EDGE_INTERIOR;
}

/* Calls fn for each aligned word of [lo, hi) that points into a block,
 * with its offset from lo and the edge's kind (enum mvz_edge_kind); pages
 * that fault are skipped and counted. */
static void scan_words_at(uintptr_t lo, uintptr_t hi, uintptr_t base,
                          void (*fn)(uintptr_t off, long target, int interior, void *ctx),
                          void *ctx)
{
    lo = (lo + 7) & ~(uintptr_t)7;
    volatile uintptr_t at = lo;
    /* The mask is not saved (a system call per block): the fault handler
     * runs with SA_NODEFER, so nothing is left blocked when it jumps. */
    if (sigsetjmp(S.jb, 0)) { /* a fault at `at`: go on past its page */
        uintptr_t next = (at | (PAGE - 1)) + 1;
        S.unreadable += (next < hi ? next : hi) - at;
        at = next;
    }
    S.guarded = 1;
    for (uintptr_t a = at; a + 8 <= hi; a += 8) {
        at = a;
        uintptr_t v = *(const volatile uintptr_t *)a;
        int interior;
        long t = find_block(v, &interior);
        if (t >= 0)
            fn(a - base, t, interior ? heuristic(v, &S.b[t]) : MVZ_EDGE_START, ctx);
        S.scanned += 8;
    }
    S.guarded = 0;
}

static void scan_words(uintptr_t lo, uintptr_t hi,
                       void (*fn)(uintptr_t off, long target, int interior, void *ctx), void *ctx)
{
    scan_words_at(lo, hi, (lo + 7) & ~(uintptr_t)7, fn, ctx);
}

/* The same over a range of any size, reading only its pages that are in
 * memory: a page never touched holds zeros, and reading it would make the
 * kernel map it. Sanitizers reserve terabytes of shadow memory, which a
 * plain scan made the copy's page tables grow through (12 GiB for a
 * ThreadSanitizer program before it was stopped). Swapped-out pages are
 * passed over too. */
#define RESIDENCY_CHUNK (256u << 20)
static unsigned char residency[RESIDENCY_CHUNK / PAGE];

static void scan_range(uintptr_t lo, uintptr_t hi,
                       void (*fn)(uintptr_t off, long target, int kind, void *ctx), void *ctx)
{
    if (hi - lo <= 16 * PAGE) {
        scan_words(lo, hi, fn, ctx);
        return;
    }
    for (uintptr_t chunk = lo & ~(uintptr_t)(PAGE - 1); chunk < hi; chunk += RESIDENCY_CHUNK) {
        uintptr_t end = hi - chunk < RESIDENCY_CHUNK ? hi : chunk + RESIDENCY_CHUNK;
        size_t pages = (end - chunk + PAGE - 1) / PAGE;
        if (mincore((void *)chunk, end - chunk, residency) < 0)
            continue; /* not mapped (any more): nothing to read */
        for (size_t i = 0; i < pages;) {
            if (!(residency[i] & 1)) {
                i++;
                continue;
            }
            size_t j = i;
            while (j < pages && (residency[j] & 1))
                j++;
            uintptr_t a = chunk + i * PAGE, b = chunk + j * PAGE;
            a = a < lo ? lo : a;
            b = b > hi ? hi : b;
            if (a < b)
                scan_words_at(a, b, (lo + 7) & ~(uintptr_t)7, fn, ctx);
            i = j;
        }
    }
}

/* ---- edges: the pointers in each block ---- */
struct block_edges {
    long from, prev_target;
    uint64_t n;
    struct mvz_buf list;
};

static void block_edge(uintptr_t off, long target, int interior, void *ctx)
{
    struct block_edges *e = ctx;
    if (target == e->from)
        return; /* a block's pointer into itself keeps nothing alive */
    mvz_put_svarint(&e->list, target - e->prev_target);
    mvz_put_uvarint(&e->list, (uint64_t)(off / 8) << 3 | (uint64_t)interior);
    e->prev_target = target;
    e->n++;
}

/* EDGES records: the snapshot, the first block's index, then for each
 * block in turn (to the end of the record) its count of edges and the
 * edges. */
static void write_edges(void)
{
    struct block_edges e = {0};
    for (size_t i = 0; i < S.n; i++) {
        if (S.rec.len == 0) {
            mvz_put_uvarint(&S.rec, S.p->id);
            mvz_put_uvarint(&S.rec, i);
        }
        e.from = e.prev_target = (long)i;
        e.n = 0;
        e.list.len = 0;
        scan_range(S.b[i].addr, S.b[i].addr + S.b[i].size, block_edge, &e);
        mvz_put_uvarint(&S.rec, e.n);
        mvz_put_bytes(&S.rec, e.list.data, e.list.len);
        S.edges += e.n;
        if (S.rec.len >= RECORD_FLUSH || i + 1 == S.n)
            put_record(MVZ_REC_SNAPSHOT_EDGES);
    }
    mvz_buf_free(&e.list);
}

/* ---- contents: the blocks' bytes (--snapshot-contents) ---- */
#define CONTENTS_PIECE (64u << 10)

/* Copies n bytes at src to dst; 0, or -1 when they cannot be read. */
static int read_guarded(uintptr_t src, size_t n, uint8_t *dst)
{
    if (sigsetjmp(S.jb, 0)) {
        S.guarded = 0;
        return -1;
    }
    S.guarded = 1;
    memcpy(dst, (const void *)src, n);
    S.guarded = 0;
    return 0;
}

/* CONTENTS records: pieces of at most CONTENTS_PIECE bytes, each (block,
 * offset, length, bytes); a piece that cannot be read is left out. */
static void write_contents(void)
{
    static uint8_t piece[CONTENTS_PIECE];
    size_t prev = 0;
    for (size_t i = 0; i < S.n; i++)
        for (uint64_t off = 0; off < S.b[i].size; off += CONTENTS_PIECE) {
            size_t n = S.b[i].size - off < CONTENTS_PIECE ? S.b[i].size - off : CONTENTS_PIECE;
            if (read_guarded(S.b[i].addr + off, n, piece) < 0)
                continue;
            if (S.rec.len == 0) {
                mvz_put_uvarint(&S.rec, S.p->id);
                prev = 0;
            }
            mvz_put_uvarint(&S.rec, i - prev);
            mvz_put_uvarint(&S.rec, off);
            mvz_put_uvarint(&S.rec, n);
            mvz_put_bytes(&S.rec, piece, n);
            prev = i;
            if (S.rec.len >= RECORD_FLUSH)
                put_record(MVZ_REC_SNAPSHOT_CONTENTS);
        }
    if (S.rec.len)
        put_record(MVZ_REC_SNAPSHOT_CONTENTS);
}

/* ---- roots ---- */
struct root_edges {
    uintptr_t last_off;
    uint64_t n;
    struct mvz_buf list;
};

static void root_edge(uintptr_t off, long target, int interior, void *ctx)
{
    struct root_edges *e = ctx;
    mvz_put_uvarint(&e->list, (off - e->last_off) / 8);
    mvz_put_uvarint(&e->list, (uint64_t)target);
    mvz_put_uvarint(&e->list, (uint64_t)interior);
    e->last_off = off;
    e->n++;
}

/* One ROOTS record: the region [lo, hi) and the pointers in it. Regions
 * with none are counted, not written. */
static void scan_root(int kind, uint32_t tid, const char *name, uintptr_t lo, uintptr_t hi)
{
    static struct root_edges e;
    if (hi <= lo)
        return;
    e.last_off = 0;
    e.n = 0;
    e.list.len = 0;
    scan_range(lo, hi, root_edge, &e);
    S.regions++;
    if (S.debug && e.n) {
        char line[512];
        int len = snprintf(line, sizeof(line),
                           "memviz: scan: root kind %d %s %#lx-%#lx: %lu pointer(s)\n", kind, name,
                           (unsigned long)lo, (unsigned long)hi, (unsigned long)e.n);
        if (write(2, line, (size_t)len) < 0)
            S.debug = 0;
    }
    if (!e.n)
        return;
    mvz_put_uvarint(&S.rec, S.p->id);
    mvz_put_uvarint(&S.rec, (uint64_t)kind);
    mvz_put_uvarint(&S.rec, tid);
    mvz_put_str(&S.rec, name);
    mvz_put_uvarint(&S.rec, lo);
    mvz_put_uvarint(&S.rec, hi - lo);
    mvz_put_uvarint(&S.rec, e.n);
    mvz_put_bytes(&S.rec, e.list.data, e.list.len);
    S.root_edges += e.n;
    put_record(MVZ_REC_SNAPSHOT_ROOTS);
}

/* [lo, hi) less the agent's ranges and the live blocks in it (the
 * allocator's mmapped blocks lie in anonymous mappings too). */
static void scan_root_parts(int kind, uint32_t tid, const char *name, uintptr_t lo, uintptr_t hi)
{
    while (lo < hi) {
        uintptr_t cut = hi, skip_to = hi;
        for (size_t i = 0; i < S.nown; i++) /* the first own range reaching past lo */
            if (S.own[i].hi > lo && S.own[i].lo < cut) {
                cut = S.own[i].lo > lo ? S.own[i].lo : lo;
                skip_to = S.own[i].hi;
                break;
            }
        int in;
        long b = find_block(lo, &in);
        if (b < 0 && S.n) { /* the first block starting at or after lo */
            size_t l = 0, h = S.n;
            while (l < h) {
                size_t m = l + (h - l) / 2;
                if (S.b[m].addr < lo)
                    l = m + 1;
                else
                    h = m;
            }
            b = l < S.n ? (long)l : -1;
        }
        if (b >= 0 && S.b[b].addr < cut) {
            cut = S.b[b].addr > lo ? S.b[b].addr : lo;
            skip_to = S.b[b].addr + (S.b[b].size ? S.b[b].size : 1);
        }
        scan_root(kind, tid, name, lo, cut);
        lo = skip_to > cut ? skip_to : hi;
    }
}

/* ---- the memory map ---- */
static uintptr_t hex(const char **s)
{
    uintptr_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uintptr_t)d;
    }
}

static void parse_line(const char *line, struct vma *v)
{
    memset(v, 0, sizeof(*v));
    v->lo = hex(&line);
    line++;
    v->hi = hex(&line);
    line++;
    memcpy(v->perms, line, 4);
    for (int field = 0; field < 4 && *line; field++) { /* perms offset dev inode */
        while (*line && *line != ' ')
            line++;
        while (*line == ' ')
            line++;
    }
    size_t k = 0;
    while (line[k] && line[k] != '\n' && k + 1 < sizeof(v->path))
        k++;
    memcpy(v->path, line, k);
    v->path[k] = 0;
    v->anon = v->path[0] == 0;
}

/* /proc/self/maps, read before the copy maps any memory of its own: the
 * copy's own tables (its sorted block list above all) are then in no
 * mapping it scans. The text goes into the agent's .bss, whose pages the
 * program never touches, or, for a process with very many mappings, into
 * a mapping of its own made before a second reading (it holds only text). */
static char maps_text[256 << 10];

static char *read_maps_text(size_t *len)
{
    char *buf = maps_text;
    size_t cap = sizeof(maps_text);
    for (;;) {
        int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return NULL;
        size_t got = 0;
        for (ssize_t r; got + 1 < cap && (r = read(fd, buf + got, cap - 1 - got)) > 0;)
            got += (size_t)r;
        close(fd);
        if (got + 1 < cap) {
            buf[got] = 0;
            *len = got;
            return buf;
        }
        if (buf != maps_text)
            munmap(buf, cap);
        cap *= 4;
        if (!(buf = map(cap)))
            return NULL;
    }
}

static int read_maps(void)
{
    size_t len;
    char *buf = read_maps_text(&len);
    if (!buf)
        return -1;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    if (!(S.v = map((lines + 1) * sizeof(*S.v))))
        return -1;
    for (char *l = buf; *l && S.nv <= lines;) {
        parse_line(l, &S.v[S.nv++]);
        char *nl = strchr(l, '\n');
        if (!nl)
            break;
        l = nl + 1;
    }
    return 0;
}

static int contains_block(uintptr_t lo, uintptr_t hi)
{
    int in;
    for (uintptr_t a = lo; a < hi; a += PAGE) /* cheap enough: one probe a page */
        if (find_block(a, &in) >= 0)
            return 1;
    return 0;
}

static const char *own_module(void)
{
    uintptr_t mine = (uintptr_t)&S;
    for (size_t i = 0; i < S.nv; i++)
        if (S.v[i].lo <= mine && mine < S.v[i].hi)
            return S.v[i].anon && i ? S.v[i - 1].path : S.v[i].path;
    return "";
}

/* A thread's stack [from, v->hi) as roots: one region per frame the
 * unwinder can tell from the state (pc, sp, bp), named by the frame's pc
 * in hex ("0x55d0c2a01234"), and the rest (frames it cannot tell, the
 * arguments and environment above main) as one region named "". */
#define STACK_FRAMES 256
static void scan_stack(uint32_t tid, uintptr_t from, const struct vma *v, uintptr_t pc,
                       uintptr_t sp, uintptr_t bp, int pc_is_ra)
{
    static uintptr_t pcs[STACK_FRAMES], cfas[STACK_FRAMES];
    int n = pc ? mvz_unwind_regs(pc, sp, bp, pc_is_ra, v->lo, v->hi, pcs, cfas, STACK_FRAMES) : 0;
    if (S.debug) {
        char line[160];
        int len =
            snprintf(line, sizeof(line),
                     "memviz: scan: stack of %u: pc %#lx sp %#lx: %d frame(s), last pc %#lx\n", tid,
                     (unsigned long)pc, (unsigned long)sp, n, n ? (unsigned long)pcs[n - 1] : 0ul);
        if (write(2, line, (size_t)len) < 0)
            n = 0;
    }
    uintptr_t lo = from;
    for (int i = 0; i < n; i++) {
        if (cfas[i] <= lo)
            continue;
        char name[24];
        snprintf(name, sizeof(name), "0x%lx", (unsigned long)pcs[i]);
        scan_root(MVZ_ROOT_STACK, tid, name, lo, cfas[i]);
        lo = cfas[i];
    }
    if (lo < v->hi)
        scan_root(MVZ_ROOT_STACK, tid, "", lo, v->hi);
}

/* The end of the agent's loaded segments (its .bss included), from its own
 * ELF program headers read in memory; 0 if unknown. Not dl_iterate_phdr:
 * it takes a lock that a stopped thread may hold. */
static uintptr_t own_data_end(const char *agent)
{
    uintptr_t base = 0;
    for (size_t i = 0; *agent && i < S.nv; i++)
        if (!strcmp(S.v[i].path, agent) && (!base || S.v[i].lo < base))
            base = S.v[i].lo;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return 0;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    uintptr_t first = UINTPTR_MAX, end = 0;
    for (unsigned k = 0; k < eh->e_phnum; k++) {
        if (ph[k].p_type != PT_LOAD)
            continue;
        first = ph[k].p_vaddr < first ? ph[k].p_vaddr & ~(uintptr_t)(PAGE - 1) : first;
        end = ph[k].p_vaddr + ph[k].p_memsz > end ? ph[k].p_vaddr + ph[k].p_memsz : end;
    }
    return first == UINTPTR_MAX ? 0 : (base - first + end + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
}

/* The kernel merges an anonymous mapping made right after the agent's .bss
 * into it: the main thread's TLS, say, when ld.so places it there. What
 * lies past the agent's data is the program's. */
static void scan_after_own_data(const struct vma *v, uintptr_t own_end)
{
    const struct mvz_scan_params *p = S.p;
    if (own_end <= v->lo || own_end >= v->hi)
        return;
    if (own_end <= p->tls && p->tls < v->hi)
        scan_root_parts(MVZ_ROOT_TLS, p->tid, "", own_end, v->hi);
    else
        scan_root_parts(MVZ_ROOT_MAPPING, 0, "", own_end, v->hi);
}

/* Each readable, writable, private mapping is a root, but the allocator's
 * heap, the agent's memory and shared mappings. */
static void scan_maps(void)
{
    const struct mvz_scan_params *p = S.p;
    const char *agent = own_module();
    uintptr_t own_end = own_data_end(agent);
    uint32_t pid = (uint32_t)getpid();
    for (size_t i = 0; i < S.nv; i++) {
        const struct vma *v = &S.v[i];
        if (v->done || v->perms[0] != 'r' || v->perms[1] != 'w' || v->perms[3] != 'p')
            continue;
        const struct vma *prev = i ? &S.v[i - 1] : NULL;
        int bss = v->anon && prev && !prev->anon && prev->hi == v->lo && prev->path[0] == '/';
        const char *module = bss ? prev->path : v->path;
        if (*agent && !strcmp(module, agent)) { /* the agent's own data */
            if (bss)
                scan_after_own_data(v, own_end);
            continue;
        }
        if (v->anon && v->hi - v->lo > MAPPING_MAX) {
            S.too_large += v->hi - v->lo;
            continue;
        }
        if (!strcmp(v->path, "[heap]") || !strcmp(v->path, "[vvar]") ||
            !strcmp(v->path, "[vsyscall]") || !strcmp(v->path, "[vdso]"))
            continue;
        int mine = p->own_stack && v->lo <= p->stack_from && p->stack_from < v->hi;
        if (mine) {
            uintptr_t from = p->stack_from + sizeof(p->regs);
            scan_stack(p->tid, from, v, p->prog_pc, p->prog_sp, p->prog_bp, 1);
        } else if (v->anon && v->lo <= p->tls && p->tls < v->hi) {
            scan_root_parts(MVZ_ROOT_TLS, p->tid, "", v->lo, v->hi);
        } else if (!strcmp(v->path, "[stack]")) {
            scan_root(MVZ_ROOT_STACK, pid, "", v->lo, v->hi);
        } else if (!v->anon || bss) {
            scan_root_parts(MVZ_ROOT_GLOBAL, 0, module, v->lo, v->hi);
        } else if (!((v->lo & ((64u << 20) - 1)) == 0 && contains_block(v->lo, v->hi))) {
            /* a 64 MiB-aligned mapping with blocks in it is one of malloc's
             * arenas, whose free chunks hold stale pointers */
            scan_root_parts(MVZ_ROOT_MAPPING, 0, "", v->lo, v->hi);
        }
    }
}

static void scan_registered(void *ctx, uintptr_t p, size_t n)
{
    (void)ctx;
    scan_root(MVZ_ROOT_REGISTERED, 0, "", p, p + n);
}

static void scan_untraced(void *ctx, uintptr_t p, size_t n)
{
    (void)ctx;
    scan_root(MVZ_ROOT_MAPPING, 0, "untraced block", p, p + n);
}

static void scan_registers(void)
{
    const struct mvz_scan_params *p = S.p;
    if (!p->own_stack)
        return;
    scan_root(MVZ_ROOT_REGISTER, p->tid, "callee-saved", (uintptr_t)p->regs,
              (uintptr_t)p->regs + sizeof(p->regs));
}

/* The mapping that holds a, or NULL. */
static struct vma *vma_of(uintptr_t a)
{
    size_t lo = 0, hi = S.nv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S.v[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < S.nv && S.v[lo].lo <= a ? &S.v[lo] : NULL;
}

#if defined(__x86_64__)
#define REG_BP 4  /* struct user_regs_struct: rbp */
#define REG_IP 16 /* rip */
#define REG_SP 19 /* rsp */
#define REG_TP 21 /* fs_base, the thread pointer */
#define RED_ZONE 128
#endif

/* The other threads, stopped: their registers, their stacks from their
 * stack pointers (less the red zone a leaf function may use below it),
 * and the thread-local storage around their thread pointers when it is not
 * in the stack's mapping (the main thread's). */
static void scan_stopped(void)
{
#if defined(__x86_64__)
    const struct mvz_scan_params *p = S.p;
    for (uint32_t i = 0; i < p->nstopped; i++) {
        const struct mvz_stopped *t = &p->stopped[i];
        if (!t->ok)
            continue;
        scan_root(MVZ_ROOT_REGISTER, t->tid, "all", (uintptr_t)t->regs,
                  (uintptr_t)t->regs + sizeof(t->regs));
        uintptr_t sp = t->regs[REG_SP], tp = t->regs[REG_TP];
        struct vma *v = vma_of(sp);
        if (v && !v->done) {
            uintptr_t from = sp - RED_ZONE > v->lo ? sp - RED_ZONE : v->lo;
            scan_stack(t->tid, from, v, t->regs[REG_IP], sp, t->regs[REG_BP], 0);
            v->done = 1;
        }
        struct vma *tv = vma_of(tp);
        if (tv && !tv->done && tv->anon) {
            /* in the agent's .bss mapping (merged into it): past the agent's data */
            uintptr_t own_end = own_data_end(own_module());
            uintptr_t from = own_end > tv->lo && own_end <= tp ? own_end : tv->lo;
            scan_root_parts(MVZ_ROOT_TLS, t->tid, "", from, tv->hi);
            tv->done = 1;
        }
    }
#endif
}

static void write_end(uint64_t t0)
{
    const struct mvz_scan_params *p = S.p;
    uint64_t pause = 0;
    for (int i = 0;
         i < 1000 && p->pause_ns && !(pause = __atomic_load_n(p->pause_ns, __ATOMIC_ACQUIRE));
         i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    mvz_put_uvarint(&S.rec, p->id);
    mvz_put_uvarint(&S.rec, pause);
    mvz_put_uvarint(&S.rec, S.n);
    mvz_put_uvarint(&S.rec, S.edges);
    mvz_put_uvarint(&S.rec, S.regions);
    mvz_put_uvarint(&S.rec, S.root_edges);
    mvz_put_uvarint(&S.rec, S.scanned);
    mvz_put_uvarint(&S.rec, S.unreadable);
    mvz_put_uvarint(&S.rec, mvz_now_ns() - t0);
    mvz_put_uvarint(&S.rec, S.too_large);
    put_record(MVZ_REC_SNAPSHOT_END);
}

void mvz_scan_run(const struct mvz_scan_params *p)
{
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer's runtime, copied mid-flight with locks other threads
     * held, takes the copy's reads of their memory for races and deadlocks
     * reporting them: the test build of the agent takes no snapshots. */
    (void)p;
    quit(0);
#endif
    uint64_t t0 = mvz_now_ns();
    S.p = p;
    const char *dbg = getenv("MEMVIZ_SCAN_DEBUG");
    S.debug = dbg && *dbg == '1';
    signals_for_scan();
    if (read_maps() < 0 || collect_blocks() < 0 || mvz_cw_init(&S.w, p->fd) < 0)
        quit(1);
    collect_own();
    mvz_api_ignored(mark_ignored, NULL);
    if (S.debug)
        for (size_t i = 0; i < S.nown; i++) {
            char line[128];
            int len = snprintf(line, sizeof(line), "memviz: scan: own %#lx-%#lx\n",
                               (unsigned long)S.own[i].lo, (unsigned long)S.own[i].hi);
            if (write(2, line, (size_t)len) < 0)
                break;
        }
    write_header();
    write_blocks();
    write_edges();
    scan_registers();
    scan_stopped();
    mvz_api_roots(scan_registered, NULL);
    mvz_untraced_each(scan_untraced, NULL);
    scan_maps();
    if (S.p->contents)
        write_contents();
    write_end(t0);
    quit(mvz_cw_flush(&S.w) == 0 ? 0 : 1);
}
