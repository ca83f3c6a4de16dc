/*
 * sampling.h - what one recorded allocation stands for in a sampled trace
 * (`memviz run --sample R`, the SAMPLING record): the agent records an
 * allocation of s bytes with probability p = 1 - exp(-s / R) (always when
 * s >= R), so counting it 1 / p times, and its bytes s / p times, makes
 * every sum an unbiased estimate (docs/METRICS.md). R == 0: a full trace,
 * every weight 1. The agent's summary and the analysis use the same
 * rounding, so they agree.
 */
#ifndef MVZ_TRACE_SAMPLING_H
#define MVZ_TRACE_SAMPLING_H

#include <math.h>
#include <stdint.h>

static inline double mvz_sample_weight(uint64_t size, uint64_t rate)
{
    if (!rate || size >= rate)
        return 1.0;
    return 1.0 / -expm1(-(double)(size ? size : 1) / (double)rate);
}

/* The allocations a recorded one stands for. */
static inline uint64_t mvz_sample_count(uint64_t size, uint64_t rate)
{
    return rate ? (uint64_t)llround(mvz_sample_weight(size, rate)) : 1;
}

/* The bytes a recorded allocation of size stands for. */
static inline uint64_t mvz_sample_size(uint64_t size, uint64_t rate)
{
    return rate ? (uint64_t)llround((double)size * mvz_sample_weight(size, rate)) : size;
}

/* What a recorded allocation adds to the variance of an estimate of
 * bytes (Horvitz-Thompson: (1 - p) / p^2 * size^2); 0 when it was sure
 * to be recorded. The estimate's 95% error is 1.96 * sqrt(the sum). */
static inline double mvz_sample_variance(uint64_t size, uint64_t rate)
{
    double w = mvz_sample_weight(size, rate);
    return (w * w - w) * (double)size * (double)size;
}

#endif
