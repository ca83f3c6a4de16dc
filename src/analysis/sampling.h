/*
 * sampling.h - which parts of a run were sampled, and at what rate
 * (`memviz run --sample R`, or a live client's switch: SAMPLING records,
 * docs/FORMAT.md). The replay keeps the rate in force as it goes; each
 * live block remembers the rate it was allocated under by a small index,
 * so that its release and its leak are weighted as its allocation was
 * (trace/sampling.h), whatever the rate is by then.
 */
#ifndef MVZ_ANALYSIS_SAMPLING_H
#define MVZ_ANALYSIS_SAMPLING_H

#include <stddef.h>
#include <stdint.h>

#define MVZ_SAMPLING_RATES 256

/* From from_ns on (to the next section), allocations were recorded at
 * mean rate bytes (0: every one). */
struct mvz_sampling_section {
    uint64_t from_ns, rate;
};

struct mvz_sampling {
    uint64_t now;                          /* the rate in force at the replay's position */
    uint8_t now_ix;                        /* its index in rates */
    uint16_t nrates;                       /* rates[0] is 0: every allocation */
    uint64_t rates[MVZ_SAMPLING_RATES];    /* the distinct rates seen, by index */
    struct mvz_sampling_section *sections; /* every SAMPLING record, in order */
    size_t nsections, sections_cap;
};

/* A SAMPLING record: rate from ts on. */
void mvz_sampling_switch(struct mvz_sampling *s, uint64_t ts, uint64_t rate);
/* The rate of a block allocated under index ix. */
static inline uint64_t mvz_sampling_rate(const struct mvz_sampling *s, uint8_t ix)
{
    return s->rates[ix];
}
/* Whether the run had a full part as well as a sampled one. */
int mvz_sampling_mixed(const struct mvz_sampling *s);
void mvz_sampling_free(struct mvz_sampling *s);

#endif
