/*
 * group.c - see group.h. A group's key is a string (function and module,
 * file, or module path) interned into ids that index the group array.
 */
#include "analysis/group.h"
#include "util/fmt.h"

/* A module's file name, "??" when there is none. */
static const char *module_name(const char *path)
{
    return path ? mvz_base_name(path) : "??";
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const by_names[] = {"stack", "function", "file", "module"};

int mvz_by_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, by_names[i]))
            return i;
    return -1;
}

const char *mvz_by_name(enum mvz_by by)
{
    return (unsigned)by < 4 ? by_names[by] : "?";
}

static void key_of(enum mvz_by by, const struct mvz_frame *f, char *buf, size_t cap)
{
    switch (by) {
    case MVZ_BY_FUNCTION:
        snprintf(buf, cap, "%s  [%s]", f->function, module_name(f->module));
        break;
    case MVZ_BY_FILE:
        if (f->file)
            snprintf(buf, cap, "%s", f->file);
        else
            snprintf(buf, cap, "[%s] (no source information)", module_name(f->module));
        break;
    default:
        snprintf(buf, cap, "%s", f->module ? f->module : "??");
        break;
    }
}

int mvz_group_add(struct mvz_grouping *g, const struct mvz_frame *f, size_t n,
                  const struct mvz_site *s)
{
    char key[2048];
    if (!n)
        return 0;
    key_of(g->by, &f[0], key, sizeof(key));
    uint32_t id = mvz_strtab_intern(&g->keys, key);
    if (!id)
        return -1;
    if (id > g->n) {
        struct mvz_group *v = realloc(g->groups, id * sizeof(*v));
        if (!v)
            return -1;
        memset(v + g->n, 0, (id - g->n) * sizeof(*v));
        g->groups = v;
        g->n = id;
    }
    struct mvz_group *grp = &g->groups[id - 1];
    if (!grp->nsites++) {
        grp->key = id;
        grp->s.stack = s->stack;
    }
    mvz_site_add(&grp->s, s);
    return 0;
}

const char *mvz_group_name(const struct mvz_grouping *g, const struct mvz_group *grp)
{
    return mvz_strtab_get(&g->keys, grp->key);
}

void mvz_grouping_free(struct mvz_grouping *g)
{
    mvz_strtab_free(&g->keys);
    free(g->groups);
    memset(g, 0, sizeof(*g));
}
