/*
 * lifetimes.c - blocks by size and lifetime (lifetimes.h). One replay:
 * each allocation's time is kept by the block's key until its release,
 * whose time less it is the lifetime; what is still live at the end is
 * "never freed". Counts are of blocks recorded (a sampled trace's are
 * the sampled ones, not estimates), over the whole run.
 */
#include "ui/lifetimes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/replay.h"
#include "trace/format.h"
#include "ui/doc.h"

/* Under 100 us, then decades to >= 100 s, then never freed. Finer would
 * be noise: heap events are timed in units of 2^16 ns (65.5 us), and the
 * events of a GROUP share one time (docs/FORMAT.md). */
#define LIFE_CLASSES 9
#define NEVER (LIFE_CLASSES - 1)
#define FIRST_LIMIT_NS 100000ull

static const char *const LIFE_NAMES[LIFE_CLASSES] = {"< 0.1 ms",  "0.1-1 ms", "1-10 ms",
                                                     "10-100 ms", "0.1-1 s",  "1-10 s",
                                                     "10-100 s",  ">= 100 s", "never freed"};

struct births {
    uint64_t *key, *ts, *size; /* open addressing; key 0 empty, 1 removed */
    size_t mask, used, removed;
    uint64_t count[MVZ_SIZE_BUCKETS][LIFE_CLASSES], bytes[MVZ_SIZE_BUCKETS][LIFE_CLASSES];
    int oom;
};

static uint64_t key_of(const struct mvz_event *e)
{
    return (e->addr | ((uint64_t)((e->flags & MVZ_EV_NAMED) != 0) << 63)) + 2;
}

static size_t slot(const struct births *b, uint64_t k)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & b->mask;
}

static int grow(struct births *b)
{
    size_t n = b->mask ? 2 * (b->mask + 1) : 1024;
    if (b->used * 4 < (b->mask + 1))
        n = b->mask + 1; /* mostly removed slots: the same size, cleaned */
    uint64_t *k = calloc(n, sizeof(*k)), *t = calloc(n, sizeof(*t)), *z = calloc(n, sizeof(*z));
    if (!k || !t || !z) {
        free(k);
        free(t);
        free(z);
        return -1;
    }
    struct births old = *b;
    b->key = k;
    b->ts = t;
    b->size = z;
    b->mask = n - 1;
    b->used = b->removed = 0;
    for (size_t i = 0; old.key && i <= old.mask; i++)
        if (old.key[i] > 1) {
            size_t j = slot(b, old.key[i]);
            while (b->key[j])
                j = (j + 1) & b->mask;
            b->key[j] = old.key[i];
            b->ts[j] = old.ts[i];
            b->size[j] = old.size[i];
            b->used++;
        }
    free(old.key);
    free(old.ts);
    free(old.size);
    return 0;
}

static void born(struct births *b, uint64_t k, uint64_t ts, uint64_t size)
{
    if ((b->used + b->removed + 1) * 2 > b->mask + 1 && grow(b) < 0) {
        b->oom = 1;
        return;
    }
    size_t j = slot(b, k);
    while (b->key[j] > 1 && b->key[j] != k)
        j = (j + 1) & b->mask;
    if (b->key[j] == 1)
        b->removed--;
    if (b->key[j] != k)
        b->used++;
    b->key[j] = k;
    b->ts[j] = ts;
    b->size[j] = size;
}

/* The birth time of k, forgotten; 0 when unknown. */
static int died(struct births *b, uint64_t k, uint64_t *ts)
{
    if (!b->key)
        return 0;
    for (size_t j = slot(b, k); b->key[j]; j = (j + 1) & b->mask)
        if (b->key[j] == k) {
            *ts = b->ts[j];
            b->key[j] = 1;
            b->used--;
            b->removed++;
            return 1;
        }
    return 0;
}

static int life_class(uint64_t ns)
{
    int c = 0;
    for (uint64_t limit = FIRST_LIMIT_NS; c < NEVER - 1 && ns >= limit; limit *= 10)
        c++;
    return c;
}

static void observe(void *ctx, const struct mvz_profile *p, const struct mvz_event *e,
                    uint32_t stack, uint64_t size)
{
    struct births *b = ctx;
    (void)p;
    (void)stack;
    uint64_t t0;
    if (e->op == MVZ_OP_ALLOC)
        born(b, key_of(e), e->ts, size);
    else if (e->op == MVZ_OP_FREE && died(b, key_of(e), &t0)) {
        unsigned s = mvz_size_bucket(size);
        int l = life_class(e->ts > t0 ? e->ts - t0 : 0);
        b->count[s][l]++;
        b->bytes[s][l] += size;
    }
}

/* What is left live at the end: never freed. */
static void never_freed(struct births *b)
{
    for (size_t i = 0; b->key && i <= b->mask; i++)
        if (b->key[i] > 1) {
            unsigned s = mvz_size_bucket(b->size[i]);
            b->count[s][NEVER]++;
            b->bytes[s][NEVER] += b->size[i];
        }
}

static char *render(const struct births *b, size_t *len)
{
    struct mvz_ui_doc d;
    if (mvz_ui_doc_open(&d) < 0)
        return NULL;
    struct mvz_json *j = &d.j;
    mvz_json_begin_object(j);
    mvz_json_key(j, "lifetimes");
    mvz_json_begin_array(j);
    for (int l = 0; l < LIFE_CLASSES; l++)
        mvz_json_string(j, LIFE_NAMES[l]);
    mvz_json_end_array(j);
    mvz_json_key(j, "sizes"); /* [min size, counts by lifetime, bytes by lifetime] */
    mvz_json_begin_array(j);
    for (int s = 0; s < MVZ_SIZE_BUCKETS; s++) {
        uint64_t any = 0;
        for (int l = 0; l < LIFE_CLASSES; l++)
            any += b->count[s][l];
        if (!any)
            continue;
        mvz_json_begin_array(j);
        mvz_json_uint(j, s ? 1ull << (s - 1) : 0);
        mvz_json_begin_array(j);
        for (int l = 0; l < LIFE_CLASSES; l++)
            mvz_json_uint(j, b->count[s][l]);
        mvz_json_end_array(j);
        mvz_json_begin_array(j);
        for (int l = 0; l < LIFE_CLASSES; l++)
            mvz_json_uint(j, b->bytes[s][l]);
        mvz_json_end_array(j);
        mvz_json_end_array(j);
    }
    mvz_json_end_array(j);
    mvz_json_end_object(j);
    return mvz_ui_doc_close(&d, len);
}

static char *build(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen)
{
    struct births *b = calloc(1, sizeof(*b));
    struct mvz_profile *p = calloc(1, sizeof(*p));
    char *doc = NULL;
    if (!b || !p) {
        snprintf(err, errlen, "out of memory");
    } else {
        struct mvz_profile_options o = {.to_ns = UINT64_MAX, .observe = observe, .ctx = b};
        if (mvz_profile_load_window(p, m->path, &o, err, errlen) == 0) {
            never_freed(b);
            if (b->oom || !(doc = render(b, len)))
                snprintf(err, errlen, "out of memory");
        }
        mvz_profile_free(p);
    }
    if (b) {
        free(b->key);
        free(b->ts);
        free(b->size);
    }
    free(b);
    free(p);
    return doc;
}

char *mvz_ui_lifetimes_json(struct mvz_ui_model *m, size_t *len, char *err, size_t errlen)
{
    *err = 0;
    pthread_mutex_lock(&m->build_lock);
    char *doc = mvz_ui_cache_get(m, "lifetimes", len);
    if (!doc && (doc = build(m, len, err, errlen)))
        mvz_ui_cache_put(m, "lifetimes", doc, *len);
    pthread_mutex_unlock(&m->build_lock);
    if (!doc && !*err)
        snprintf(err, errlen, "out of memory");
    return doc;
}
