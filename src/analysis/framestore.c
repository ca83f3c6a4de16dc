/*
 * framestore.c - see framestore.h. Frames are kept as interned string ids
 * in one array; a stack is a range of it. Stacks are found by content
 * through an open-addressing table kept at most half full.
 */
#include "analysis/framestore.h"

#include <stdlib.h>
#include <string.h>

#include "util/strtab.h"

struct stored_frame {
    uint32_t function, file, module, line; /* string ids; 0 = none */
    uint32_t inlined;
};

struct stored_stack {
    size_t first; /* index into frames */
    uint32_t n;
    uint64_t hash;
};

struct mvz_framestore {
    struct mvz_strtab strs;
    struct stored_frame *frames;
    size_t nframes, frames_cap;
    struct stored_stack *stacks; /* by id; [0] unused */
    size_t nstacks, stacks_cap;
    uint32_t *slots; /* stack ids, 0 = empty */
    size_t nslots;
};

struct mvz_framestore *mvz_framestore_new(void)
{
    struct mvz_framestore *fs = calloc(1, sizeof(*fs));
    if (fs)
        fs->nstacks = 1;
    return fs;
}

void mvz_framestore_free(struct mvz_framestore *fs)
{
    if (!fs)
        return;
    mvz_strtab_free(&fs->strs);
    free(fs->frames);
    free(fs->stacks);
    free(fs->slots);
    free(fs);
}

static uint64_t hash_frames(const struct stored_frame *f, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)f;
    for (size_t i = 0; i < n * sizeof(*f); i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h ? h : 1;
}

static int intern(struct mvz_framestore *fs, const char *s, uint32_t *id)
{
    *id = s ? mvz_strtab_intern(&fs->strs, s) : 0;
    return s && !*id ? -1 : 0;
}

/* Appends f[0..n) to fs->frames as string ids; -1 when out of memory. */
static int put_frames(struct mvz_framestore *fs, const struct mvz_frame *f, size_t n)
{
    if (fs->nframes + n > fs->frames_cap) {
        size_t cap = fs->frames_cap ? fs->frames_cap : 4096;
        while (cap < fs->nframes + n)
            cap *= 2;
        struct stored_frame *v = realloc(fs->frames, cap * sizeof(*v));
        if (!v)
            return -1;
        fs->frames = v;
        fs->frames_cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        struct stored_frame *d = &fs->frames[fs->nframes + i];
        memset(d, 0, sizeof(*d));
        if (intern(fs, f[i].function ? f[i].function : "??", &d->function) < 0 ||
            intern(fs, f[i].file, &d->file) < 0 || intern(fs, f[i].module, &d->module) < 0)
            return -1;
        d->line = f[i].line;
        d->inlined = f[i].inlined ? 1 : 0;
    }
    return 0;
}

static int grow_slots(struct mvz_framestore *fs)
{
    size_t n = fs->nslots ? fs->nslots * 2 : 1024;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t id = 1; id < fs->nstacks; id++) {
        size_t j = fs->stacks[id].hash & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = (uint32_t)id;
    }
    free(fs->slots);
    fs->slots = slots;
    fs->nslots = n;
    return 0;
}

static int same_stack(const struct mvz_framestore *fs, const struct stored_stack *st,
                      const struct stored_frame *f, size_t n, uint64_t h)
{
    return st->hash == h && st->n == n && !memcmp(&fs->frames[st->first], f, n * sizeof(*f));
}

uint32_t mvz_framestore_add(struct mvz_framestore *fs, const struct mvz_frame *f, size_t n)
{
    if (n > UINT32_MAX || fs->nstacks >= UINT32_MAX - 1)
        return 0;
    if (2 * (fs->nstacks + 1) > fs->nslots && grow_slots(fs) < 0)
        return 0;
    /* The candidate is written after the stored frames; it stays there only
     * when it is new. */
    if (put_frames(fs, f, n) < 0)
        return 0;
    const struct stored_frame *cand = &fs->frames[fs->nframes];
    uint64_t h = hash_frames(cand, n);
    size_t j = h & (fs->nslots - 1);
    for (; fs->slots[j]; j = (j + 1) & (fs->nslots - 1))
        if (same_stack(fs, &fs->stacks[fs->slots[j]], cand, n, h))
            return fs->slots[j];
    if (fs->nstacks >= fs->stacks_cap) {
        size_t cap = fs->stacks_cap ? fs->stacks_cap * 2 : 1024;
        struct stored_stack *v = realloc(fs->stacks, cap * sizeof(*v));
        if (!v)
            return 0;
        fs->stacks = v;
        fs->stacks_cap = cap;
    }
    uint32_t id = (uint32_t)fs->nstacks++;
    fs->stacks[id] = (struct stored_stack){fs->nframes, (uint32_t)n, h};
    fs->nframes += n;
    fs->slots[j] = id;
    return id;
}

size_t mvz_framestore_get(const struct mvz_framestore *fs, uint32_t id, struct mvz_frame *out,
                          size_t max)
{
    if (!id || id >= fs->nstacks)
        return 0;
    const struct stored_stack *st = &fs->stacks[id];
    size_t n = st->n < max ? st->n : max;
    for (size_t i = 0; i < n; i++) {
        const struct stored_frame *s = &fs->frames[st->first + i];
        out[i] = (struct mvz_frame){
            .function = mvz_strtab_get(&fs->strs, s->function),
            .file = s->file ? mvz_strtab_get(&fs->strs, s->file) : NULL,
            .line = s->line,
            .module = s->module ? mvz_strtab_get(&fs->strs, s->module) : NULL,
            .inlined = (int)s->inlined,
        };
    }
    return n;
}
