/*
 * demo - a small example to look at with memviz (`make demo`).
 *
 * It counts the words of a short text in a hash table, prints the most
 * frequent ones, and then tidies up - almost. What memviz should show:
 *   - the peak comes from load_text(), which builds a big scratch copy of
 *     the text (64 KiB) and frees it after the table is built;
 *   - add_word() makes many small allocations (one node per distinct word);
 *   - remember_query() leaks: the query history is never freed;
 *   - to_lower_copy() makes lots of short-lived (temporary) allocations.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 64

struct word {
    char *text;
    int count;
    struct word *next;
};

static struct word *table[NBUCKETS];
static char **history;
static int history_len;

static const char *const TEXT =
    "the quick brown fox jumps over the lazy dog and the dog sleeps while the fox "
    "runs around the farm the farmer watches the fox and the dog and laughs "
    "a heap profiler shows where memory goes and the profiler never lies ";

static unsigned hash(const char *s)
{
    unsigned h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h % NBUCKETS;
}

/* Short-lived: a lower-case copy used only for the lookup. */
__attribute__((noinline)) static char *to_lower_copy(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        c[i] = (char)tolower((unsigned char)s[i]);
    c[n] = 0;
    return c;
}

__attribute__((noinline)) static void add_word(const char *s, size_t n)
{
    char *key = to_lower_copy(s, n);
    unsigned h = hash(key);
    for (struct word *w = table[h]; w; w = w->next) {
        if (strcmp(w->text, key) == 0) {
            w->count++;
            free(key);
            return;
        }
    }
    struct word *w = malloc(sizeof *w);
    w->text = key;
    w->count = 1;
    w->next = table[h];
    table[h] = w;
}

/* The peak: a big scratch buffer holding the text many times over. */
__attribute__((noinline)) static void load_text(void)
{
    size_t len = strlen(TEXT), reps = 65536 / len;
    char *scratch = malloc(reps * len + 1);
    for (size_t r = 0; r < reps; r++)
        memcpy(scratch + r * len, TEXT, len);
    scratch[reps * len] = 0;
    /* Only the first copy is counted; the rest is just ballast. */
    const char *p = scratch, *end = scratch + len;
    while (p < end) {
        while (p < end && !isalpha((unsigned char)*p))
            p++;
        const char *start = p;
        while (p < end && isalpha((unsigned char)*p))
            p++;
        if (p > start)
            add_word(start, (size_t)(p - start));
    }
    free(scratch);
}

/* The leak: the history grows and is never released. */
__attribute__((noinline)) static void remember_query(const char *q)
{
    history = realloc(history, (size_t)(history_len + 1) * sizeof *history);
    history[history_len++] = strdup(q);
}

static int lookup(const char *q)
{
    remember_query(q);
    for (struct word *w = table[hash(q)]; w; w = w->next)
        if (strcmp(w->text, q) == 0)
            return w->count;
    return 0;
}

static void free_table(void)
{
    for (int i = 0; i < NBUCKETS; i++) {
        struct word *w = table[i];
        while (w) {
            struct word *next = w->next;
            free(w->text);
            free(w);
            w = next;
        }
        table[i] = NULL;
    }
}

int main(void)
{
    load_text();
    const char *queries[] = {"the", "fox", "dog", "profiler", "cat"};
    for (size_t i = 0; i < sizeof queries / sizeof *queries; i++)
        printf("%-9s %d\n", queries[i], lookup(queries[i]));
    free_table();
    return 0;
}
