/*
 * clock.c - event timestamps. The hot path reads the CPU's time-stamp
 * counter when it is invariant (cpuinfo flags constant_tsc and nonstop_tsc,
 * and the kernel itself keeps time with it):
 * 9 ns against 21 ns for clock_gettime on the reference machine, twice per
 * allocation. The writer converts counter values to nanoseconds since start
 * with the rate measured against CLOCK_MONOTONIC over the run so far, so the
 * estimate only gets better as the run gets longer. Without an invariant
 * counter, events carry CLOCK_MONOTONIC nanoseconds directly.
 *
 * The counter's value is also the event's order key (agent.h): record.c
 * reads it after an `lfence` for allocations in threaded processes, so
 * that the read cannot run ahead of the allocator's loads. Without an
 * invariant counter the key is a global sequence that keeps up with
 * CLOCK_MONOTONIC.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"

int mvz_tsc_ok;
static uint64_t tsc0, ns0;
static double ns_per_tick;

static int cpu_has_invariant_tsc(void)
{
    static char buf[16384];
    int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *flags = strstr(buf, "\nflags");
    if (!flags)
        return 0;
    char *eol = strchr(flags + 1, '\n');
    if (eol)
        *eol = 0;
    if (!strstr(flags, " constant_tsc") || !strstr(flags, " nonstop_tsc"))
        return 0;
    /* The kernel checks that the counters of all CPUs agree and stops
     * using the TSC as its clock when they do not; so do we. */
    char cs[32] = "";
    fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
              O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t k = read(fd, cs, sizeof(cs) - 1);
        cs[k > 0 ? k : 0] = 0;
        close(fd);
    }
    return strncmp(cs, "tsc", 3) == 0;
}

/* Call once per process image (and again in a fork child). */
void mvz_clock_init(void)
{
    static int probed, invariant;
    if (!probed) {
        /* MEMVIZ_CLOCK=monotonic: keys from the counter instead (tests run
         * both ways; machines without an invariant TSC always do). */
        const char *c = getenv("MEMVIZ_CLOCK");
        invariant = !(c && !strcmp(c, "monotonic")) && cpu_has_invariant_tsc();
        probed = 1;
    }
    ns0 = mvz_now_ns();
    mvz_agent.start_ns = ns0;
#if defined(__x86_64__)
    tsc0 = __builtin_ia32_rdtsc();
    mvz_tsc_ok = invariant;
#endif
    ns_per_tick = 0;
}

/* Re-measures the counter rate; caller holds mvz_agent.lock. */
void mvz_clock_refresh(void)
{
    if (!mvz_tsc_ok)
        return;
#if defined(__x86_64__)
    uint64_t ns = mvz_now_ns();
    uint64_t tsc = __builtin_ia32_rdtsc();
    if (tsc > tsc0 && ns > ns0) {
        ns_per_tick = (double)(ns - ns0) / (double)(tsc - tsc0);
    }
#endif
}

/* The conversion of raw timestamps to ns since the agent started, at the
 * rate measured so far, as a 32.32 fixed-point factor: the writer converts
 * every event's time, and a call with floating point per event cost 6% of
 * the two-thread std::list run. */
void mvz_clock_conv(struct mvz_clock_conv *c)
{
    if (mvz_tsc_ok && ns_per_tick == 0)
        mvz_clock_refresh();
    c->base = mvz_tsc_ok ? tsc0 : mvz_agent.start_ns;
    c->mult = mvz_tsc_ok ? (uint64_t)(ns_per_tick * 4294967296.0) : 1ull << 32;
}

/* The current value of the order key (record.c). */
uint64_t mvz_key_now(void)
{
#if defined(__x86_64__)
    if (mvz_tsc_ok) {
        __builtin_ia32_lfence();
        return __builtin_ia32_rdtsc();
    }
#endif
    return atomic_load(&mvz_agent.seq);
}

/* How far below "now" the writer's watermark stays: a producer's in-flight
 * mark may sit in its store buffer for a moment after it read the counter
 * (nanoseconds; preemption and VM exits drain store buffers). 10 us is far
 * beyond that, and short next to a ring's worth of events (a thread can
 * produce 2,000 events in 50 us).
 * Counter keys are taken with a locked instruction (compare-and-swap), which drains the
 * store buffer first: no margin. */
uint64_t mvz_key_margin(void)
{
    if (!mvz_tsc_ok)
        return 0;
    double ticks_per_ns = ns_per_tick > 0 ? 1.0 / ns_per_tick : 5.0;
    return (uint64_t)(10e3 * ticks_per_ns);
}
