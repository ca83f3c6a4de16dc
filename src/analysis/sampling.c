/*
 * sampling.c - the sampled parts of a run (sampling.h).
 */
#include "analysis/sampling.h"

#include <stdlib.h>
#include <string.h>

static uint8_t rate_index(struct mvz_sampling *s, uint64_t rate)
{
    if (!s->nrates)
        s->nrates = 1; /* rates[0] = 0 */
    for (uint16_t i = 0; i < s->nrates; i++)
        if (s->rates[i] == rate)
            return (uint8_t)i;
    if (s->nrates == MVZ_SAMPLING_RATES) /* a trace that switched among 255 rates: the last's */
        s->nrates--;
    s->rates[s->nrates] = rate;
    return (uint8_t)s->nrates++;
}

void mvz_sampling_switch(struct mvz_sampling *s, uint64_t ts, uint64_t rate)
{
    s->now = rate;
    s->now_ix = rate_index(s, rate);
    if (s->nsections == s->sections_cap) {
        size_t cap = s->sections_cap ? 2 * s->sections_cap : 8;
        struct mvz_sampling_section *v = realloc(s->sections, cap * sizeof(*v));
        if (!v)
            return;
        s->sections = v;
        s->sections_cap = cap;
    }
    s->sections[s->nsections++] = (struct mvz_sampling_section){ts, rate};
}

int mvz_sampling_mixed(const struct mvz_sampling *s)
{
    int full = !s->nsections || s->sections[0].from_ns > 0, sampled = 0;
    for (size_t i = 0; i < s->nsections; i++) {
        full |= s->sections[i].rate == 0;
        sampled |= s->sections[i].rate != 0;
    }
    return full && sampled;
}

void mvz_sampling_free(struct mvz_sampling *s)
{
    free(s->sections);
    memset(s, 0, sizeof(*s));
}
