/*
 * select.h - which sites a view shows: --filter / --exclude patterns on a
 * site's frames, and leak suppressions in LeakSanitizer's "leak:" syntax
 * (from files and a small built-in list of known one-time allocations of
 * glibc and libstdc++). Suppressed leaks are counted per rule, never dropped.
 */
#ifndef MVZ_ANALYSIS_SELECT_H
#define MVZ_ANALYSIS_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/symbols.h"

struct mvz_suppression {
    char *pattern; /* the template after "leak:" */
    /* built-in rules only: when set, `pattern` must match the innermost
     * frame and `also` the frame after it (an allocation made directly by
     * that caller), instead of any frame matching `pattern` */
    char *also;
    const char *origin; /* "built-in", or the file it came from */
    unsigned line;
    uint64_t bytes, blocks, sites;  /* what it suppressed */
    struct mvz_match_memo *memo[2]; /* private: pattern's and also's results */
};

struct mvz_select {
    char **filters, **excludes; /* fnmatch(3) globs */
    size_t nfilters, nexcludes;
    struct mvz_suppression *supp;
    size_t nsupp;
};

/* Pattern lists own copies of their strings. Each returns 0, or -1 with a
 * one-line reason in err. */
int mvz_select_add_filter(struct mvz_select *s, const char *glob, int exclude);
int mvz_select_add_builtin_suppressions(struct mvz_select *s);
int mvz_select_load_suppressions(struct mvz_select *s, const char *path, char *err, size_t errlen);
void mvz_select_free(struct mvz_select *s);

/* 1 when a stack with frames f[0..n) passes --filter and --exclude: some
 * frame's function, source file or module matches a filter (when any is
 * given) and none matches an exclude. */
int mvz_select_keep(const struct mvz_select *s, const struct mvz_frame *f, size_t n);
/* The first suppression matching frames f[0..n), or NULL. Results are
 * remembered by string address (frames come from a symbolizer, whose strings
 * are interned and stay put): the strings must not change while `s` is in
 * use. */
struct mvz_suppression *mvz_select_suppression(struct mvz_select *s, const struct mvz_frame *f,
                                               size_t n);

/* What the frames of one return address (its inlined calls expanded) say
 * about the suppression rules, one bit per rule: whether the rule's
 * pattern matches any of them, and for two-frame rules whether the
 * pattern matches the first and `also` the first or second. A report
 * keeps these by address, so that each address of the many leaking
 * stacks is symbolized and matched once. */
#define MVZ_SUPP_BITS 64
struct mvz_supp_bits {
    uint64_t any, p0, a0, a1;
    uint32_t nframes;
};
/* -1 when there are more rules than MVZ_SUPP_BITS. */
int mvz_select_supp_bits(struct mvz_select *s, const struct mvz_frame *f, size_t n,
                         struct mvz_supp_bits *out);
/* The first suppression matching a stack whose addresses have bits
 * b[0..n): what mvz_select_suppression gives for its frames. */
struct mvz_suppression *mvz_select_suppression_bits(const struct mvz_select *s,
                                                    const struct mvz_supp_bits *b, size_t n);

/* LeakSanitizer's template matching: '*' matches any run of characters,
 * a leading '^' anchors at the start and a trailing '$' at the end;
 * otherwise the template may match anywhere in str. */
int mvz_template_match(const char *tmpl, const char *str);

#endif
