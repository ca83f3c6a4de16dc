/*
 * strtab.h - interns strings: equal strings get the same small id, so that
 * aggregations can key on frames and functions by integer.
 */
#ifndef MVZ_UTIL_STRTAB_H
#define MVZ_UTIL_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct mvz_strtab {
    char **strs; /* by id; ids start at 1 (0 = none) */
    size_t n, cap;
    uint32_t *slots; /* open addressing: id, 0 = empty */
    size_t nslots;
};

/* Returns the id of s (copied on first sight), or 0 when out of memory. */
uint32_t mvz_strtab_intern(struct mvz_strtab *t, const char *s);
const char *mvz_strtab_get(const struct mvz_strtab *t, uint32_t id);
void mvz_strtab_free(struct mvz_strtab *t);

#endif
