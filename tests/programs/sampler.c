/*
 * sampler - a heap of known sizes per site, for the sampled mode. No
 * stdio. Keeps 400,000 blocks of 64 bytes (keep_small: 25,600,000
 * bytes), 100,000 of 200 (keep_medium: 20,000,000) and 4,000 of 5,000
 * (keep_large: 20,000,000); allocates and frees 1,000,000 blocks of 100
 * bytes (churn: none left); then exits without freeing the kept ones.
 */
#include <stdlib.h>

static void *kept[504000];
static size_t nkept;

__attribute__((noinline)) static void keep_small(void)
{
    for (int i = 0; i < 400000; i++)
        kept[nkept++] = malloc(64);
}

__attribute__((noinline)) static void keep_medium(void)
{
    for (int i = 0; i < 100000; i++)
        kept[nkept++] = malloc(200);
}

__attribute__((noinline)) static void keep_large(void)
{
    for (int i = 0; i < 4000; i++)
        kept[nkept++] = malloc(5000);
}

__attribute__((noinline)) static void churn(void)
{
    for (int i = 0; i < 1000000; i++) {
        void *volatile p = malloc(100);
        free(p);
    }
}

int main(void)
{
    keep_small();
    churn();
    keep_medium();
    keep_large();
    return 0;
}
