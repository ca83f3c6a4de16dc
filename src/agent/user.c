/*
 * user.c - the instrumentation API of include/memviz.h: counters, values,
 * a log and phases, recorded into the trace (USER records, docs/FORMAT.md)
 * so that `memviz report` shows them afterwards and `memviz run --live`
 * while the program runs.
 *
 * An update is one relaxed atomic store or add on the instrument's own
 * cache line: no lock, no system call, nothing written. The writer thread
 * reads every instrument once a period (100 ms) and writes the ones that
 * changed (USER SAMPLE); a new instrument's name goes out before its first
 * value (USER DEF). Log lines and phases are rare: each is written when it
 * happens, with its time, under the agent's lock.
 *
 * Instruments live in a table the agent maps once; they are never freed,
 * so a handle stays valid for the whole run. Invariant: slots below
 * `defined` are initialised; those below `written` have had their DEF
 * written.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "trace/format.h"

#define MAX_INSTRUMENTS 1024
#define SAMPLE_NS (100u * 1000 * 1000)
#define TEXT_MAX 1024

struct instrument {
    _Alignas(64) _Atomic int64_t value; /* int64, a double's bits, a string's version */
    int64_t written_value;              /* the writer's: what the trace has */
    int kind;                           /* enum mvz_user_kind */
    _Atomic int text_busy;              /* a string value: text is being copied */
    char name[MVZ_USER_NAME_MAX];
};

/* A string value's text, by instrument id: written and read with the
 * instrument's text_busy held (a spin: the copy is 128 bytes at most). */
static char (*texts)[MVZ_USER_TEXT_MAX];

static struct instrument *table;
static _Atomic uint32_t defined;
static uint32_t written; /* the writer's */
static pthread_mutex_t define_lock = PTHREAD_MUTEX_INITIALIZER;
/* The writer polls and the exiting thread polls a last time (mvz_finish):
 * poll_lock keeps them one at a time over last_sample_ns, written and the
 * instruments' written_value. */
static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_sample_ns;

/* A dummy for calls before the agent records, or past the table's end:
 * updates to it go nowhere. */
static struct instrument nowhere;

static struct instrument *define(const char *name, int kind)
{
    if (!name || !mvz_recording())
        return &nowhere;
    mvz_tls.internal++;
    pthread_mutex_lock(&define_lock);
    struct instrument *in = &nowhere;
    if (!table)
        table = mvz_map_zeroed(MAX_INSTRUMENTS * sizeof(*table));
    if (kind == MVZ_USER_VALUE_TEXT && !texts) /* pages touched only when used */
        texts = mvz_map_zeroed(MAX_INSTRUMENTS * sizeof(*texts));
    if (kind == MVZ_USER_VALUE_TEXT && !texts) {
        pthread_mutex_unlock(&define_lock);
        mvz_tls.internal--;
        return &nowhere;
    }
    uint32_t n = atomic_load(&defined);
    for (uint32_t i = 0; table && i < n && in == &nowhere; i++)
        if (table[i].kind == kind && !strncmp(table[i].name, name, sizeof(table[i].name) - 1))
            in = &table[i];
    if (in == &nowhere && table && n < MAX_INSTRUMENTS) {
        in = &table[n];
        in->kind = kind;
        in->written_value = INT64_MIN; /* the first sample writes it */
        snprintf(in->name, sizeof(in->name), "%s", name);
        atomic_store(&defined, n + 1);
    }
    pthread_mutex_unlock(&define_lock);
    mvz_tls.internal--;
    return in;
}

int64_t *mvz_user_value_slot(const char *name, int kind)
{
    struct instrument *in = define(name, kind);
    return in == &nowhere ? NULL : (int64_t *)&in->value;
}

void mvz_user_store(int64_t *slot, int64_t v)
{
    atomic_store_explicit((_Atomic int64_t *)slot, v, memory_order_relaxed);
}

int mvz_user_define(const char *name, int kind, uint32_t *id)
{
    struct instrument *in = define(name, kind);
    if (in == &nowhere)
        return -1;
    *id = (uint32_t)(in - table);
    return 0;
}

/* ---- the API ---- */
MVZ_EXPORT memviz_counter *memviz_counter_new(const char *name)
{
    return (memviz_counter *)define(name, MVZ_USER_COUNTER);
}

MVZ_EXPORT void memviz_counter_add(memviz_counter *c, int64_t n)
{
    if (c)
        atomic_fetch_add_explicit(&((struct instrument *)c)->value, n, memory_order_relaxed);
}

MVZ_EXPORT memviz_value *memviz_value_new(const char *name)
{
    return (memviz_value *)define(name, MVZ_USER_VALUE_INT);
}

MVZ_EXPORT memviz_value *memviz_value_new_double(const char *name)
{
    return (memviz_value *)define(name, MVZ_USER_VALUE_DOUBLE);
}

MVZ_EXPORT void memviz_value_set(memviz_value *v, int64_t x)
{
    if (v)
        atomic_store_explicit(&((struct instrument *)v)->value, x, memory_order_relaxed);
}

MVZ_EXPORT void memviz_value_set_double(memviz_value *v, double x)
{
    int64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    if (v)
        atomic_store_explicit(&((struct instrument *)v)->value, bits, memory_order_relaxed);
}

MVZ_EXPORT memviz_value *memviz_value_new_string(const char *name)
{
    return (memviz_value *)define(name, MVZ_USER_VALUE_TEXT);
}

static void text_lock(struct instrument *in)
{
    while (atomic_exchange_explicit(&in->text_busy, 1, memory_order_acquire))
        sched_yield();
}

static void text_unlock(struct instrument *in)
{
    atomic_store_explicit(&in->text_busy, 0, memory_order_release);
}

/* The text is copied (up to 127 bytes) and its version counted; the
 * writer writes it when the version moved. */
MVZ_EXPORT void memviz_value_set_string(memviz_value *v, const char *s)
{
    struct instrument *in = (struct instrument *)v;
    if (!in || in == &nowhere || in->kind != MVZ_USER_VALUE_TEXT || !texts)
        return;
    char *dst = texts[in - table];
    text_lock(in);
    size_t n = s ? strnlen(s, MVZ_USER_TEXT_MAX - 1) : 0;
    memcpy(dst, s ? s : "", n);
    dst[n] = 0;
    atomic_fetch_add_explicit(&in->value, 1, memory_order_relaxed);
    text_unlock(in);
}

/* Log lines and phases wait here, with their order keys, until a drain
 * has taken every event below their keys; the writer then times them
 * with that drain's clock, as it timed those events, so that a phase's
 * start falls between the right events (the clock's rate is refined as
 * the run goes, and an early conversion can be far off). */
#define PENDING_MAX 256
struct pending_text {
    uint64_t key;
    int what;
    uint32_t tid;
    char text[TEXT_MAX];
};
static struct pending_text *pending;
static unsigned npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_pending(const struct pending_text *p)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, (uint64_t)p->what);
    mvz_put_uvarint(&b, mvz_rings_key_ns(p->key));
    mvz_put_uvarint(&b, p->tid);
    mvz_put_str(&b, p->text);
    mvz_cw_record(&mvz_agent.writer, MVZ_REC_USER, &b);
    mvz_buf_free(&b);
}

void mvz_user_drain_locked(void)
{
    uint64_t below = mvz_rings_drained_below();
    pthread_mutex_lock(&pending_lock);
    unsigned kept = 0;
    for (unsigned i = 0; i < npending; i++) {
        if (pending[i].key < below)
            write_pending(&pending[i]);
        else
            pending[kept++] = pending[i];
    }
    npending = kept;
    pthread_mutex_unlock(&pending_lock);
}

static void write_text(int what, const char *text)
{
    mvz_tls.internal++;
    uint64_t key = mvz_key_now();
    pthread_mutex_lock(&pending_lock);
    if (!pending)
        pending = mvz_map_zeroed(PENDING_MAX * sizeof(*pending));
    int full = !pending || npending == PENDING_MAX;
    if (!full) {
        struct pending_text *p = &pending[npending++];
        p->key = key;
        p->what = what;
        p->tid = (uint32_t)syscall(SYS_gettid);
        snprintf(p->text, sizeof(p->text), "%s", text);
    }
    pthread_mutex_unlock(&pending_lock);
    if (full) /* a burst of lines: get the writer to take them */
        mvz_writer_wake();
    mvz_tls.internal--;
}

MVZ_EXPORT memviz_tag *memviz_tag_new(const char *name)
{
    return (memviz_tag *)define(name, MVZ_USER_TAG_KIND);
}

/* The mark goes through the thread's ring, in order with its events: the
 * writer names the block when it takes it (collector.c). */
MVZ_EXPORT void memviz_tag_mark(memviz_tag *tag, const void *block)
{
    struct instrument *in = (struct instrument *)tag;
    if (!in || in == &nowhere || !block || !table || !mvz_recording())
        return;
    mvz_on_tag(block, (uint32_t)(in - table));
}

MVZ_EXPORT void memviz_log(const char *fmt, ...)
{
    if (!fmt || !mvz_recording())
        return;
    char text[TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    mvz_tls.internal++; /* vsnprintf may allocate (%ls, positional arguments) */
    vsnprintf(text, sizeof(text), fmt, ap);
    mvz_tls.internal--;
    va_end(ap);
    write_text(MVZ_USER_LOG, text);
}

MVZ_EXPORT void memviz_phase(const char *name)
{
    if (name && mvz_recording())
        write_text(MVZ_USER_PHASE, name);
}

/* ---- the writer's side ---- */
static void write_defs(uint32_t n)
{
    for (; written < n; written++) {
        struct mvz_buf b = {0};
        mvz_put_uvarint(&b, MVZ_USER_DEF);
        mvz_put_uvarint(&b, written);
        mvz_put_uvarint(&b, (uint64_t)table[written].kind);
        mvz_put_str(&b, table[written].name);
        mvz_write_record(MVZ_REC_USER, &b);
        mvz_buf_free(&b);
    }
}

/* A string value that changed: its text now, in a record of its own. */
static void write_text_value(uint32_t id, uint64_t now)
{
    struct instrument *in = &table[id];
    char text[MVZ_USER_TEXT_MAX];
    text_lock(in);
    in->written_value = atomic_load_explicit(&in->value, memory_order_relaxed);
    memcpy(text, texts[id], sizeof(text));
    text_unlock(in);
    if (!in->written_value) /* never set */
        return;
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, MVZ_USER_TEXT);
    mvz_put_uvarint(&b, now - mvz_agent.start_ns);
    mvz_put_uvarint(&b, id);
    mvz_put_str(&b, text);
    mvz_write_record(MVZ_REC_USER, &b);
    mvz_buf_free(&b);
}

static void poll_locked(int force)
{
    uint32_t n = atomic_load(&defined);
    uint64_t now = mvz_now_ns();
    uint64_t period = mvz_runpage_period_ns();
    if (!n || (!force && now - last_sample_ns < (period ? period : SAMPLE_NS)))
        return;
    last_sample_ns = now;
    write_defs(n);
    struct mvz_buf b = {0};
    uint32_t changed = 0;
    mvz_put_uvarint(&b, MVZ_USER_SAMPLE);
    mvz_put_uvarint(&b, now - mvz_agent.start_ns);
    for (uint32_t i = 0; i < n; i++) {
        int64_t v = atomic_load_explicit(&table[i].value, memory_order_relaxed);
        if (v == table[i].written_value)
            continue;
        if (table[i].kind == MVZ_USER_VALUE_TEXT) {
            write_text_value(i, now);
            continue;
        }
        table[i].written_value = v;
        mvz_put_uvarint(&b, i);
        mvz_put_svarint(&b, v);
        changed++;
    }
    if (changed)
        mvz_write_record(MVZ_REC_USER, &b);
    mvz_buf_free(&b);
    mvz_stopwatch_poll(now - mvz_agent.start_ns);
}

void mvz_user_poll(int force)
{
    pthread_mutex_lock(&poll_lock);
    poll_locked(force);
    pthread_mutex_unlock(&poll_lock);
}

/* The child writes a new trace: it defines every instrument again and
 * writes every value once. The writer that held poll_lock is gone. */
void mvz_user_after_fork_child(void)
{
    pthread_mutex_init(&poll_lock, NULL);
    last_sample_ns = 0;
    written = 0;
    uint32_t n = atomic_load(&defined);
    for (uint32_t i = 0; i < n; i++) {
        table[i].written_value = INT64_MIN;
        atomic_store(&table[i].text_busy, 0); /* its setter may be gone */
    }
}
