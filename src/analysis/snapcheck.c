/*
 * snapcheck.c - checks a heap snapshot against the trace's own events
 * (snapshot.h, mvz_snap_verify): replayed up to the snapshot's moment (its
 * events_before heap events), the trace must have every block of the
 * snapshot live, by its name (thread and serial), with the snapshot's size
 * and stack. The snapshot is taken from the agent's address table, the
 * trace from its events; this says the two tell the same story.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/snapshot.h"
#include "trace/heap_codec.h"

struct check {
    const struct mvz_snapshot *s;
    uint64_t not_live;
    int done;
};

static void verify_now(struct check *c, struct mvz_profile *p)
{
    for (size_t i = 0; i < c->s->nblocks; i++) {
        const struct mvz_snap_block *b = &c->s->blocks[i];
        struct mvz_block got;
        if (!mvz_blocks_find(&p->blocks, mvz_heap_block(b->tid, b->serial), 1, &got) ||
            got.size != b->size || got.stack != b->stack)
            c->not_live++;
    }
    c->done = 1;
}

static void observe(void *ctx, const struct mvz_profile *p, const struct mvz_event *e,
                    uint32_t stack, uint64_t size)
{
    (void)e, (void)stack, (void)size;
    struct check *c = ctx;
    if (!c->done && p->heap_events == c->s->info.events)
        verify_now(c, (struct mvz_profile *)p);
}

int mvz_snap_verify(const char *path, const struct mvz_snapshot *s, uint64_t *not_live, char *err,
                    size_t errlen)
{
    struct check c = {.s = s};
    struct mvz_profile_options opt = {.to_ns = UINT64_MAX, .observe = observe, .ctx = &c};
    static struct mvz_profile p;
    memset(&p, 0, sizeof(p));
    if (mvz_profile_load_window(&p, path, &opt, err, errlen) < 0)
        return -1;
    if (!c.done) /* before any event, or after the last */
        verify_now(&c, &p);
    *not_live = c.not_live;
    mvz_profile_free(&p);
    return 0;
}
