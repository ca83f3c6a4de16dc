/*
 * agent.h - internal interface of libmemviz, the preloaded agent.
 *
 * The agent's pieces:
 *   init.c           configuration, output file, start and end of tracing
 *   real.c           the real allocator functions (dlsym(RTLD_NEXT)) and the
 *                    bootstrap arena that serves dlsym's own allocations
 *   hooks_malloc.c   malloc, free, realloc, ... (the C entry points)
 *   hooks_cxx.c      operator new / delete in all variants
 *   hooks_process.c  exit paths, fork, exec, dlopen, fatal signals
 *   hooks_fd.c       keeps the trace's file descriptor out of the program's way
 *   hooks_ns.c       stops the writer thread around unshare/setns, which need
 *                    a single-threaded caller
 *   record.c         the hot path every hook shares: order key, stack, ring
 *   clock.c          event timestamps (the time-stamp counter, when invariant)
 *   ring.h, ring.c   per-thread event buffers (single producer, single
 *                    consumer): the producer's steps inline in ring.h; the
 *                    writer merges them by key when it drains them (ring.c)
 *   collector.c      maps addresses to blocks and writes HEAP records
 *   unwind.c         the fast unwinder (.eh_frame rules, the previous walk)
 *   stacks.c         stack capture (unwind.c, else libunwind) and
 *                    deduplication into ids
 *   modules.c        which ELF objects are mapped, for offline symbolization
 *   mapped.c         the agent's own memory, mapped from the kernel
 *   writer.c         the writer thread: drains buffers, encodes, writes chunks
 *   runpage.c        the closing summary's numbers, shared with memviz run
 *
 * Invariants:
 *  - Nothing the agent allocates for itself is recorded: every agent code
 *    path that may allocate runs with tls.internal set, and the writer thread
 *    has it set for its whole life.
 *  - Events are ordered by a key taken after the real allocator returned a
 *    block and before a block is handed back to the real free, so a block's
 *    allocation always has a smaller key than its release and a reused
 *    address's release a smaller key than its next allocation. The key is
 *    the invariant time-stamp counter where there is one (record.c), else a
 *    global sequence number. The writer merges what every thread
 *    published below a watermark (a key below which every event is
 *    published) by key, so the trace holds events in the order they
 *    happened and needs no keys.
 */
#ifndef MVZ_AGENT_H
#define MVZ_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "trace/buf.h"
#include "trace/chunk_writer.h"
#include "trace/format.h"

#define MVZ_EXPORT __attribute__((visibility("default")))
#define MVZ_LIKELY(x) __builtin_expect(!!(x), 1)
#define MVZ_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define MVZ_DEFAULT_DEPTH 256
enum { MVZ_GROUPS_AUTO, MVZ_GROUPS_ALWAYS, MVZ_GROUPS_NEVER };
#define MVZ_MAX_DEPTH 1024
#define MVZ_FLUSH_INTERVAL_MS 20
/* Queued records are compressed and written at least this often, and
 * whenever MVZ_CW_COMPRESS_AT bytes are queued: what a SIGKILL can lose. */
#define MVZ_WRITE_INTERVAL_MS 100

/* ---- real.c ---- */
struct mvz_real {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
};
extern struct mvz_real mvz_real;
void mvz_resolve_real(void);
int mvz_bootstrap_owns(const void *p);
void *mvz_bootstrap_alloc(size_t size, size_t align);
void *mvz_dlsym_next(const char *name);

/* ---- per-thread state ---- */
struct mvz_ring;
struct mvz_stack_cache;
struct mvz_tls {
    int internal;     /* >0: agent code is running; calls pass through untraced */
    int in_hook;      /* >0: inside a hook's recording path (reentry = signal handler) */
    int unwound_once; /* libunwind has set up its per-thread state */
    uint32_t last_stack, last_stack_epoch; /* id of the previous fast unwind's stack */
    int offload; /* stacks go to the drainer as frame records (stacks.c) */
    int tid;
    struct mvz_ring *ring;
    struct mvz_stack_cache *cache; /* of whoever resolves stacks on this thread */
};
extern __thread struct mvz_tls mvz_tls;

/* ---- init.c: global state ---- */
struct mvz_agent {
    _Atomic int state; /* MVZ_OFF, MVZ_RECORDING, MVZ_FINISHED */
    _Atomic uint64_t seq;
    pid_t pid;
    uint64_t start_ns;
    int depth;
    int follow;
    int groups;               /* MVZ_GROUPS_*: when the collector writes GROUPs */
    int addresses;            /* ADDRS records: where each block is (MEMVIZ_ADDRESSES=1) */
    uint32_t ring_grow_after; /* half rings a thread fills before its ring grows (ring.h) */
    char path[4096];          /* this image's trace file */
    char parent_path[4096];   /* the trace of the image that started us, or "" */
    int child_how;            /* enum mvz_child_how when parent_path is set */
    pthread_mutex_t lock;     /* guards `writer` and the ring list */
    /* Guards the stack table, the module list and the queued metadata.
     * Taken after `lock` when both are needed, never before: a thread
     * defining a new stack must not wait for a flush's compression. */
    pthread_mutex_t meta_lock;
    /* Guards the writer's compression and output (its zstd context, its
     * output buffer, the file): the writer thread compresses a chunk
     * holding only this, so that a producer whose ring is full can queue
     * its events meanwhile. Taken after `lock`, never before. */
    pthread_mutex_t write_lock;
    struct mvz_chunk_writer writer;
    int writer_ok;
    uint64_t lost_events;
};
extern struct mvz_agent mvz_agent;

enum { MVZ_OFF = 0, MVZ_RECORDING = 1, MVZ_FINISHED = 2 };

void mvz_init(void);
void mvz_say(const char *msg, const char *arg); /* say.c: one line for the user */
void mvz_say_init(void);
/* Says so, once, when the program's malloc is not the agent's. */
void mvz_check_allocator(void);
/* hooks_process.c: the calling thread's alternate signal stack */
void mvz_altstack_setup(void);
void mvz_altstack_release(void);
/* After a failed write of the trace: says once what is lost. */
void mvz_writer_check_error(void);
/* Caller holds mvz_agent.lock: compresses and writes what is queued. */
void mvz_writer_write_queued_locked(void);
static inline int mvz_recording(void)
{
    return atomic_load_explicit(&mvz_agent.state, memory_order_relaxed) == MVZ_RECORDING;
}
uint64_t mvz_now_ns(void);

/* ---- clock.c: event timestamps ---- */
extern int mvz_tsc_ok;
void mvz_clock_init(void);
void mvz_clock_refresh(void);
struct mvz_clock_conv {
    uint64_t base, mult; /* ns = (raw - base) * mult / 2^32 */
};
void mvz_clock_conv(struct mvz_clock_conv *c);
static inline uint64_t mvz_clock_ns(const struct mvz_clock_conv *c, uint64_t raw)
{
    if (raw <= c->base)
        return 0;
    return (uint64_t)((unsigned __int128)(raw - c->base) * c->mult >> 32);
}
uint64_t mvz_key_now(void);
uint64_t mvz_key_margin(void);
/* Writes everything buffered, then the END record; tracing stops. */
void mvz_finish(void);
/* Records how this process is ending (agent's view; the CLI's wins). */
void mvz_record_exit(int how, int status, int sig);

/* Returns 1 when a hook must go straight to the real allocator without
 * recording. Triggers resolution and initialisation on the very first call. */
static inline int mvz_passthrough(void)
{
    if (MVZ_UNLIKELY(!mvz_real.malloc) && !mvz_tls.internal)
        mvz_resolve_real();
    if (MVZ_UNLIKELY(atomic_load_explicit(&mvz_agent.state, memory_order_relaxed) == MVZ_OFF) &&
        !mvz_tls.internal && mvz_real.malloc)
        mvz_init();
    return mvz_tls.internal || !mvz_recording();
}

/* ---- hooks: the recording path ---- */
/* The frame of the hook the program called (all agent code keeps frame
 * pointers): the unwinder starts from it instead of walking the agent's
 * own frames to find the program's, a third of its fixed cost. Any agent
 * frame of the calling thread's live stack will do; the walk passes the
 * agent's frames above the program's first. */
#define MVZ_HOOK_FRAME __builtin_frame_address(0)
/* record.c: the recording path proper; the hooks call mvz_on_alloc and
 * mvz_on_free (below), which leave out what sampled mode does not record. */
/* rate: mvz_sample_bytes as the hook read it (one read decides the event) */
void mvz_record_alloc(void *p, size_t size, int entry, const void *hook_frame, uint64_t rate);
void mvz_record_free(void *p, int entry);
/* memviz_tag_mark: block p marked with tag id, in the thread's ring. */
void mvz_on_tag(const void *p, uint32_t tag);
uint64_t mvz_realloc_begin(void);
void mvz_realloc_end(void *old, size_t size, void *p, uint64_t key, int entry,
                     const void *hook_frame);
uint64_t mvz_next_seq(void);

/* ---- ring.c ---- */
/* 32 bytes, two to a cache line: the key doubles as the event's time
 * (record.c), so a slot carries no separate timestamp. */
struct mvz_slot {
    _Atomic uint64_t seq; /* the key; 0 = empty; set last, with release order */
    uint64_t addr;
    uint64_t size;
    uint32_t stack; /* by stack_kind: an id, or where the frames are */
    uint8_t op;
    uint8_t entry;
    uint8_t stack_kind; /* MVZ_SK_* */
};
/* What a slot's `stack` holds. A thread with many stacks does not look them
 * up: it leaves the frames that differ from its previous stack in its
 * ring's frame area, and whoever drains the ring turns them into an id, in
 * ring order (stacks.c). */
enum {
    MVZ_SK_ID,     /* an id (MVZ_STACK_NONE and MVZ_STACK_NESTED too) */
    MVZ_SK_SAME,   /* the same stack as the thread's previous one */
    MVZ_SK_FRAMES, /* frames at this word of the frame area (struct mvz_frames) */
};
_Static_assert(sizeof(struct mvz_slot) == 32, "two slots to a cache line");
/* A thread's frame area: records of captured frames, written by the thread,
 * read in ring order by whoever drains its ring (stacks.c). */
#define MVZ_FRAME_WORDS 32768u /* 256 KiB, faulted in as used */
struct mvz_frames {
    _Atomic uint64_t head;              /* the thread's: next word to write */
    uint64_t tail_seen;                 /* the thread's last look at tail */
    uint32_t records;                   /* the thread's: records written */
    _Alignas(64) _Atomic uint64_t tail; /* the drainer's: words before it are free */
    /* the drainer's view of the thread's latest stack, outermost first */
    uint32_t n, id, serial, valid;
    const void *entry; /* its stack entry, the base of the next new stack */
    uintptr_t stack[MVZ_MAX_DEPTH];
    _Alignas(64) uint64_t w[MVZ_FRAME_WORDS];
};
struct mvz_ring *mvz_ring_get(void);
struct mvz_frames *mvz_ring_frames(struct mvz_ring *r);
extern _Atomic int mvz_threaded;
/* Recording an event into the ring: ring.h. */
/* How much a flush writes: events below the watermark (NORMAL); every
 * published event (ALL: before exec, which may fail and let the program go
 * on, its later events then counted late); everything, at the end (FINAL). */
enum mvz_flush { MVZ_FLUSH_NORMAL, MVZ_FLUSH_ALL, MVZ_FLUSH_FINAL };
/* Merges published events by key into the collector (see ring.c). Caller
 * holds mvz_agent.lock. */
void mvz_rings_drain(struct mvz_chunk_writer *w, enum mvz_flush how);

/* ---- collector.c (writer only, under mvz_agent.lock) ---- */
/* One event of thread tid, in key order; *serial is the thread's next
 * allocation serial; ts in ns since the agent started; ahead the address
 * of an event coming soon (a hint), or 0. */
void mvz_collect(struct mvz_chunk_writer *w, uint32_t tid, uint64_t *serial, uint64_t key,
                 const struct mvz_slot *s, uint64_t ts, uint64_t ahead);
/* Thread tid's allocation serial counter, kept across threads that reuse
 * the id (a stable pointer), or NULL when out of memory. */
uint64_t *mvz_collect_serial(uint32_t tid);
void mvz_collect_prepare(uint32_t tid);
/* Bytes in the open HEAP record, which stays open across flushes. */
size_t mvz_collect_pending(void);
/* Heap events collected so far (written or held in a group). */
uint64_t mvz_collect_count(void);
/* Queues the open HEAP record: before a chunk is made. */
void mvz_collect_flush(struct mvz_chunk_writer *w);
void mvz_collect_after_fork_child(void);
/* writer.c: stop and restart the writer thread (hooks_ns.c) */
int mvz_writer_pause(void);
void mvz_writer_resume(void);
int mvz_collect_exact(void);
size_t mvz_collect_zstd_bytes(void);
size_t mvz_collect_buffer_bytes(void);
size_t mvz_collect_trials(void); /* records compressed both ways to choose a layout */

/* ---- runpage.c: this image's entry in memviz run's shared page ---- */
struct mvz_run_counts;
void mvz_runpage_attach(void);
void mvz_runpage_after_fork_child(void);
void mvz_runpage_child_announced(void);
struct mvz_run_counts *mvz_runpage_counts(void);
uint64_t
mvz_runpage_period_ns(void); /* runpage.c: 0, or a live client's period for the instruments */
/* `memviz snapshot`'s requests: 1 and the name when one is waiting. */
int mvz_runpage_snapshot_request(char *name, size_t cap, uint32_t *req);
/* runpage.c: a client's mode switch (gen 0: none yet), and its serving. */
int mvz_runpage_sample_request(uint32_t *gen, uint64_t *rate);
void mvz_runpage_sample_done(uint32_t gen, uint64_t rate);
void mvz_runpage_snapshot_done(uint32_t req, uint64_t pause_ns);
void mvz_runpage_publish(uint32_t state);
/* After fork, in the child: forget the parent's threads and buffered events. */
void mvz_rings_after_fork_child(void);
/* The bytes of the threads' rings touched so far (caller holds
 * mvz_agent.lock): their share of the RSS. */
uint64_t mvz_rings_touched(void);
/* Every event with a smaller key has been published (caller holds
 * mvz_agent.lock). */
uint64_t mvz_rings_watermark(void);

/* ---- mapped.c: the agent's own memory, never from the program's heap ---- */
void *mvz_map_zeroed(size_t size);    /* pages faulted in as touched */
void *mvz_map_populated(size_t size); /* faulted in at once */
void *mvz_map_table(size_t size);     /* populated, in huge pages where possible */
void mvz_unmap(void *p, size_t size); /* for all three */
/* ---- env.c: variables for the processes the program starts (no malloc) ---- */
void mvz_setenv(const char *name, const char *value);

/* ---- api.c: include/memviz.h ---- */
extern _Atomic size_t mvz_api_ignored_n;
void mvz_api_released_slow(const void *block);
/* Called for every release the collector takes (and the agent's own):
 * an ignored block's address is forgotten. */
static inline void mvz_api_released(const void *block)
{
    if (MVZ_UNLIKELY(atomic_load_explicit(&mvz_api_ignored_n, memory_order_relaxed)))
        mvz_api_released_slow(block);
}
void mvz_api_lock(void);
void mvz_api_unlock(void);
void mvz_api_roots(void (*fn)(void *ctx, uintptr_t p, size_t n), void *ctx);
void mvz_api_ignored(void (*fn)(void *ctx, uintptr_t block), void *ctx);

/* ---- owned.c: the agent's own address ranges (and buf.h's
 * mvz_owned_map, mvz_owned_unmap) ---- */
void mvz_owned_range(const void *p, size_t len, int add); /* noted, not counted */
void mvz_owned_lock(void);
void mvz_owned_unlock(void);
void mvz_owned_after_clone(void); /* in a copy made under the lock */
/* Blocks of the program's malloc taken while the agent runs (owned.c): the
 * trace does not have them, a snapshot scans them as roots. */
extern _Atomic size_t mvz_untraced_n;
extern _Atomic int mvz_init_started; /* mvz_init has begun (init.c) */
void mvz_untraced_note(const void *p, size_t len, int add);
void mvz_untraced_each(void (*fn)(void *ctx, uintptr_t start, size_t len), void *ctx);
/* In the passthrough paths of the allocation hooks. */
static inline void *mvz_untraced_alloc(void *p, size_t size)
{
    /* before the agent started, or its own while it traces; not every
     * block of a program the agent stays out of (--no-follow, no trace) */
    int state = atomic_load_explicit(&mvz_agent.state, memory_order_relaxed);
    if (p && ((state == MVZ_OFF && (!mvz_init_started || mvz_tls.internal)) ||
              (mvz_tls.internal && state == MVZ_RECORDING)))
        mvz_untraced_note(p, size, 1);
    return p;
}
static inline void mvz_untraced_release(const void *p)
{
    if (MVZ_UNLIKELY(atomic_load_explicit(&mvz_untraced_n, memory_order_relaxed)) && p)
        mvz_untraced_note(p, 0, 0);
}
/* Calls fn for every range (the table's own memory too); for a snapshot's
 * scan, which holds the lock or is a fork made under it. */
size_t mvz_owned_each(void (*fn)(void *ctx, uintptr_t start, size_t len), void *ctx);
/* The agent's own mapped bytes now (mvz_mapped_count in buf.h counts
 * mappings made elsewhere). */
uint64_t mvz_mapped_now(void);
uint64_t mvz_mapped_max(void); /* the most it has been */
/* mvz_mem_grow and mvz_mem_put (declared in buf.h) serve the agent's
 * buffers; fork holds their lock. */
void mvz_mem_before_fork(void);
void mvz_mem_after_fork(int child);

/* ---- stacks.c ---- */
void mvz_stacks_init(void);
/* Frees the calling thread's caches (stacks and unwinder), at its exit. */
void mvz_stacks_thread_exit(void);
void mvz_unwind_thread_exit(void);
uint32_t mvz_stacks_epoch(void);
/* unwind.c: the return addresses from the agent's caller outwards, our own
 * frames left out, OUTERMOST FIRST (valid until the thread's next call),
 * their number and hash (mvz_hash_step from the outermost); *shared is how
 * many outer frames it has in common with the stack this thread's previous
 * fast unwind returned (all of them and *same: the very same stack). NULL
 * when libunwind must do it. */
const uintptr_t *mvz_unwind_fast(const void *hook_frame, int max, int *count, uint64_t *hash,
                                 int *shared, int *same);
/* The next fast unwind shares nothing with the previous one. */
void mvz_unwind_forget(void);
/* A frozen stack (a stopped thread's, in a snapshot's copy) from (pc, sp,
 * bp): each frame's pc and CFA, innermost first, reading only inside
 * [lo, hi); pc_is_ra 0 when pc is where the thread stopped. The count. */
int mvz_unwind_regs(uintptr_t pc, uintptr_t sp, uintptr_t bp, int pc_is_ra, uintptr_t lo,
                    uintptr_t hi, uintptr_t *pcs, uintptr_t *cfas, int max);
/* Walks remembered by the state the program called the hook from: 1 and
 * *value when the calling thread's walk from hook_frame would be one it
 * remembers, made in epoch (mvz_stacks_epoch), whose words still hold
 * what they held; then it needs no walk. keep remembers the latest fast
 * walk, its stack's value being `value`. */
int mvz_unwind_site_find(const void *hook_frame, uint32_t epoch, uint32_t *value);
void mvz_unwind_site_keep(uint32_t epoch, uint32_t value);
/* The stack hash: one multiply per frame, computed while unwinding, where
 * it overlaps with the unwinder's loads. */
#define MVZ_HASH_SEED 0x9E3779B97F4A7C15ull
static inline uint64_t mvz_hash_step(uint64_t h, uint64_t frame)
{
    return (h ^ frame) * 0xff51afd7ed558ccdull;
}
static inline uint64_t mvz_hash_finish(uint64_t h, uint32_t n)
{
    h ^= n;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}
/* The calling thread's stack, for a slot of ring r: sets *kind (MVZ_SK_*)
 * and returns the slot's `stack`. */
uint32_t mvz_stack_capture(struct mvz_ring *r, uint8_t *kind, const void *hook_frame);
/* The id of a slot's stack, taken out of ring r's frame area f in ring
 * order; caller holds mvz_agent.lock. */
uint32_t mvz_stack_resolve(struct mvz_frames *f, uint32_t stack, uint8_t kind);
/* Frames a slot pushed and then lost (its event was dropped). */
void mvz_stack_dropped(uint8_t kind);
void mvz_stacks_new_generation(void);
void mvz_stacks_after_fork_child(void);
/* Queued STACK and module records, moved to the writer under the lock. */
void mvz_meta_drain(struct mvz_chunk_writer *w);
void mvz_meta_append(uint8_t kind, const struct mvz_buf *payload);

/* ---- callgraph.c: --callgraph (MEMVIZ_CALLGRAPH=1) ---- */
extern int mvz_cg_on;
/* With the call graph on: 1 and the stack of an allocation, made from the
 * calling thread's shadow stack; 0 when it has none (unwind instead). */
int mvz_callgraph_stack(struct mvz_ring *r, uint8_t *kind, const void *hook_frame, uint32_t *id);
/* stacks.c: the id (or frame record) of frames[0..n), outermost first. */
uint32_t mvz_stack_of_frames(struct mvz_ring *r, uint8_t *kind, const uintptr_t *frames, int n);
void mvz_callgraph_write_all(void); /* every thread's tree, into the trace */
void mvz_callgraph_exit_called(void);
void mvz_callgraph_after_fork_child(void);
void mvz_cg_pg_init(void);      /* callgraph_pg.c: after the configuration is read */
void mvz_callgraph_patch(void); /* callgraph_patch.c: objects loaded since */
/* The program's signal handlers, wrapped so that their calls are entry
 * points: 1 and *wrapped to install instead of *act; and the wrapper
 * reported as the program's handler. */
struct sigaction;
int mvz_callgraph_wrap(int sig, const struct sigaction *act, struct sigaction *wrapped);
void mvz_callgraph_unwrap(int sig, struct sigaction *old);

/* ---- modules.c ---- */
void mvz_modules_scan(void); /* caller holds mvz_agent.lock */
void mvz_modules_scan_if_changed(void);
extern uintptr_t mvz_agent_text[4];
/* True for addresses inside libmemviz or libunwind: frames that are ours. */
static inline int mvz_modules_is_agent(uintptr_t ip)
{
    return ip - mvz_agent_text[0] < mvz_agent_text[1] - mvz_agent_text[0] ||
           ip - mvz_agent_text[2] < mvz_agent_text[3] - mvz_agent_text[2];
}
void mvz_modules_init_self(void);
void mvz_modules_after_fork_child(void);
uint32_t mvz_modules_generation(void);

/* ---- writer.c ---- */
void mvz_writer_start(void);
/* Drains and writes one chunk now. Caller must not hold mvz_agent.lock. */
void mvz_writer_flush(void);
void mvz_writer_flush_locked(void);
void mvz_writer_flush_final_locked(void);
/* The writer thread's id, 0 before it runs. */
uint32_t mvz_writer_tid(void);
int mvz_writer_is_running(void); /* the thread exists (it may not have run yet) */
void mvz_writer_flush_all_locked(void);
void mvz_writer_wake(void);
/* From a signal handler or _exit: let the writer thread end the trace. */
void mvz_finish_via_writer(int how, int status, int sig);
void mvz_write_record(uint8_t kind, const struct mvz_buf *payload);
/* sample.c: --sample (MEMVIZ_SAMPLE=BYTES; 0: every allocation). take:
 * whether allocation p of size bytes is recorded (remembered if so), at
 * the rate the hook read;
 * forget: whether p was (forgotten if so); restore: p is live again (a
 * failed realloc). */
extern _Atomic uint64_t mvz_sample_bytes;
void mvz_sample_init(void);
int mvz_sample_take(const void *p, size_t size, uint64_t rate);
int mvz_sample_forget(const void *p);
void mvz_sample_restore(const void *p);
void mvz_sample_after_fork_child(void);
/* A ring slot's entry with this bit: the sampler took the allocation (the
 * collector tells stragglers of a mode switch by it). */
#define MVZ_ENTRY_SAMPLED 0x80
/* sample.c: while the run goes from full to sampled, every release is
 * recorded, until the sampled set holds every block recorded before. */
extern _Atomic int mvz_sample_all_frees;
/* sample.c: some part of the run was sampled: no heap snapshots. */
extern _Atomic int mvz_sample_ever;

/* The sampled blocks' addresses, an open-addressing table that is never
 * more than a quarter full (slots holding 0 end every probe); sample.c
 * says how readers go without a lock. TOMB marks a removed address. */
struct mvz_sample_set {
    size_t mask; /* slots - 1 */
    size_t used, tombs;
    _Atomic uintptr_t slot[];
};
#define MVZ_SAMPLE_TOMB ((uintptr_t)1)
extern _Atomic(struct mvz_sample_set *) mvz_sample_current;
/* The calling thread's countdown of bytes to its next sampled allocation
 * (0: not drawn yet). */
extern __thread int64_t mvz_sample_left;

static inline size_t mvz_sample_hash(uintptr_t p, size_t mask)
{
    return (size_t)(((uint64_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 20) & mask;
}

/* Whether p is in the set now (no lock; the removal is mvz_sample_forget's). */
static inline int mvz_sample_holds(uintptr_t p)
{
    struct mvz_sample_set *s = atomic_load_explicit(&mvz_sample_current, memory_order_acquire);
    if (!s)
        return 0;
    for (size_t i = mvz_sample_hash(p, s->mask), n = 0; n <= s->mask; i = (i + 1) & s->mask, n++) {
        uintptr_t v = atomic_load_explicit(&s->slot[i], memory_order_acquire);
        if (v == 0)
            return 0;
        if (v == p)
            return 1;
    }
    return 0;
}

/* Whether the release of p must be recorded (p forgotten if sampled).
 * all_frees is read before the set: a 0 read after the rate is the 0 the
 * writer stores once the set is seeded (it stores 1 before the rate), so
 * the set then has every block recorded before the switch. */
static inline int mvz_sample_keeps_release(const void *p)
{
    if (MVZ_LIKELY(!atomic_load_explicit(&mvz_sample_bytes, memory_order_acquire)))
        return 1;
    int all = atomic_load_explicit(&mvz_sample_all_frees, memory_order_acquire);
    if (MVZ_LIKELY(!mvz_sample_holds((uintptr_t)p)))
        return all;
    return mvz_sample_forget(p) || all;
}

/* Sampled mode's common case, kept inline in the hooks: an allocation the
 * countdown passes over costs a subtraction. 1: it is not recorded. A
 * countdown not drawn yet, or run out, is mvz_sample_take's to handle. */
static inline int mvz_sample_passes_over(size_t size, uint64_t rate)
{
    if (MVZ_LIKELY(!rate) || size >= rate)
        return 0;
    int64_t left = mvz_sample_left - (int64_t)size;
    if (mvz_sample_left == 0 || left <= 0)
        return 0;
    mvz_sample_left = left;
    return 1;
}

/* The hooks' entry to recording. */
static inline void mvz_on_alloc(void *p, size_t size, int entry, const void *hook_frame)
{
    uint64_t rate = atomic_load_explicit(&mvz_sample_bytes, memory_order_relaxed);
    if (!mvz_sample_passes_over(size, rate))
        mvz_record_alloc(p, size, entry, hook_frame, rate);
}

static inline void mvz_on_free(void *p, int entry)
{
    if (mvz_sample_keeps_release(p))
        mvz_record_free(p, entry);
}
/* sample.c, the writer under mvz_agent.lock: a client's switch of the mode
 * (run page), and the end of a switch's transition. */
void mvz_sample_poll_locked(void);
/* sample.c: the trace's first SAMPLING record, if it starts sampled. */
void mvz_sample_write_record(void);
/* collector.c: from the first event at or after key on, the trace's rate
 * is rate (a SAMPLING record goes before it); the trace's rate now. */
void mvz_collect_switch(uint64_t key, uint64_t rate);
int mvz_collect_switch_pending(void);
void mvz_collect_set_rate(uint64_t rate);
/* collector.c: writes a pending switch's record once the rings are
 * drained past its key (no event came after it yet). */
void mvz_collect_switch_due(struct mvz_chunk_writer *w, uint64_t drained_below);
/* user.c: the writer writes the instruments that changed, once a period
 * (every time with force: at the end). */
void mvz_user_poll(int force);
/* user.c: the child's trace starts without the instruments' definitions */
void mvz_user_after_fork_child(void);
/* user.c: writes the log lines and phases whose keys the latest drain
 * covered, timed by its clock. Caller holds mvz_agent.lock. */
void mvz_user_drain_locked(void);
/* ring.c: below which key the latest drain took every event, and a key's
 * time by that drain's clock. */
uint64_t mvz_rings_drained_below(void);
uint64_t mvz_rings_key_ns(uint64_t key);
typedef struct memviz_counter memviz_counter;
typedef struct memviz_value memviz_value;
typedef struct memviz_stopwatch memviz_stopwatch;
typedef struct memviz_tag memviz_tag;
/* user.c: the instrument named name of that kind (made on first sight):
 * its id; -1 when none can be made. */
int mvz_user_define(const char *name, int kind, uint32_t *id);
/* user.c: the value word of the instrument named name (made on first
 * sight), for poll.c; NULL when none can be made. */
int64_t *mvz_user_value_slot(const char *name, int kind);
void mvz_user_store(int64_t *slot, int64_t v);
struct memviz_table_stats {
    size_t elements, buckets, empty_buckets, longest_chain;
};
/* stopwatch.c: the writer writes the stopwatches that changed. */
void mvz_stopwatch_poll(uint64_t ts);
void mvz_stopwatch_after_fork_child(void); /* stopwatch.c */

/* ---- hooks_fd.c: the trace descriptor ---- */
int mvz_trace_fd_adopt(int fd);
void mvz_trace_fd_check(void);
void mvz_trace_fd_release(void);

/* ---- init.c helpers used elsewhere ---- */
int mvz_open_trace(void);
int mvz_open_descendant_trace(void);
void mvz_process_hooks_init(void);
void mvz_announce_to_parent(void);
void mvz_write_process_record(void);

#endif
