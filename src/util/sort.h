/*
 * sort.h - qsort that accepts an empty array given as NULL (qsort's
 * arguments must be valid pointers even for zero elements; UBSan checks).
 */
#ifndef MVZ_UTIL_SORT_H
#define MVZ_UTIL_SORT_H

#include <stdlib.h>

static inline void mvz_sort(void *base, size_t n, size_t size,
                            int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

#endif
