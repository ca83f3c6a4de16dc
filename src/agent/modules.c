/*
 * modules.c - keeps the trace's picture of which ELF objects are mapped and
 * where, so that stacks can be symbolized offline, after the process and
 * even the libraries it dlclose'd are gone.
 *
 * Every object seen gets a MODULE_LOAD record (path, build-id, load bias,
 * address range). When an object disappears (dlclose) it gets MODULE_UNLOAD
 * and the generation advances: stacks are recorded with the generation they
 * were captured in, so an address is resolved against the objects mapped at
 * that time even if another library later reuses the range.
 */
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/agent.h"

struct module {
    uintptr_t bias, lo, hi;
    char *path;
    uint32_t id;
    int live, seen;
};

static struct module *mods;
static size_t nmods, capmods;
static uint32_t generation = 1;
static uint32_t next_module_id = 1;
static unsigned long long last_adds, last_subs;
uintptr_t mvz_agent_text[4]; /* [lo, hi) of libmemviz, then of libunwind */

/* Read without the lock by threads capturing stacks (stacks.c). */
uint32_t mvz_modules_generation(void)
{
    return __atomic_load_n(&generation, __ATOMIC_RELAXED);
}

static void object_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
    *lo = UINTPTR_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < *lo)
            *lo = start;
        if (start + ph->p_memsz > *hi)
            *hi = start + ph->p_memsz;
    }
}

/* Finds the text ranges of libmemviz and of libunwind: frames there are ours. */
static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    uintptr_t lo, hi;
    object_range(info, &lo, &hi);
    uintptr_t me = (uintptr_t)&find_self;
    if (me >= lo && me < hi) {
        mvz_agent_text[0] = lo;
        mvz_agent_text[1] = hi;
    } else if (info->dlpi_name && strstr(info->dlpi_name, "libunwind.so")) {
        mvz_agent_text[2] = lo;
        mvz_agent_text[3] = hi;
    }
    return 0;
}

void mvz_modules_init_self(void)
{
    dl_iterate_phdr(find_self, NULL);
}

static size_t build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof(*nh);
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                *out = desc;
                return nh->n_descsz;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

static struct module *find_module(uintptr_t bias, const char *path)
{
    for (size_t i = 0; i < nmods; i++)
        if (mods[i].live && mods[i].bias == bias && !strcmp(mods[i].path, path))
            return &mods[i];
    return NULL;
}

static void write_load(const struct module *m, const uint8_t *bid, size_t bidlen)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, m->id);
    mvz_put_uvarint(&b, generation);
    mvz_put_uvarint(&b, m->bias);
    mvz_put_uvarint(&b, m->lo);
    mvz_put_uvarint(&b, m->hi);
    mvz_put_str(&b, m->path);
    mvz_put_uvarint(&b, bidlen);
    mvz_put_bytes(&b, bid, bidlen);
    mvz_meta_append(MVZ_REC_MODULE_LOAD, &b);
    mvz_buf_free(&b);
}

static int add_module(struct dl_phdr_info *info, const char *path)
{
    if (nmods == capmods) {
        size_t cap = capmods ? capmods * 2 : 64;
        struct module *m = realloc(mods, cap * sizeof(*m));
        if (!m)
            return -1;
        mods = m;
        capmods = cap;
    }
    struct module *m = &mods[nmods++];
    memset(m, 0, sizeof(*m));
    m->bias = info->dlpi_addr;
    object_range(info, &m->lo, &m->hi);
    m->path = strdup(path);
    m->id = next_module_id++;
    m->live = m->seen = 1;
    const uint8_t *bid = NULL;
    size_t bidlen = build_id(info, &bid);
    write_load(m, bid, bidlen);
    return 0;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    char exe[PATH_MAX];
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    }
    last_adds = info->dlpi_adds;
    last_subs = info->dlpi_subs;
    struct module *m = find_module(info->dlpi_addr, path);
    if (m)
        m->seen = 1;
    else
        add_module(info, path);
    return 0;
}

static void write_unload(const struct module *m)
{
    struct mvz_buf b = {0};
    mvz_put_uvarint(&b, m->id);
    mvz_put_uvarint(&b, generation);
    mvz_meta_append(MVZ_REC_MODULE_UNLOAD, &b);
    mvz_buf_free(&b);
}

/* Takes mvz_agent.meta_lock; callers may hold mvz_agent.lock. */
void mvz_modules_scan(void)
{
    mvz_tls.internal++;
    pthread_mutex_lock(&mvz_agent.meta_lock);
    for (size_t i = 0; i < nmods; i++)
        mods[i].seen = 0;
    dl_iterate_phdr(scan_one, NULL);
    int unloaded = 0;
    for (size_t i = 0; i < nmods; i++) {
        if (mods[i].live && !mods[i].seen) {
            if (!unloaded)
                __atomic_store_n(&generation, generation + 1, __ATOMIC_RELAXED);
            unloaded = 1;
            mods[i].live = 0;
            write_unload(&mods[i]);
        }
    }
    if (unloaded)
        mvz_stacks_new_generation();
    pthread_mutex_unlock(&mvz_agent.meta_lock);
    mvz_tls.internal--;
}

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    unsigned long long *c = arg;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

/* Cheap check for objects loaded or unloaded behind our back (libc's own
 * dlopen of NSS or iconv modules). */
void mvz_modules_scan_if_changed(void)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(read_counters, c);
    if (c[0] != last_adds || c[1] != last_subs)
        mvz_modules_scan();
}

/* The child's trace is new: every module must be announced in it again. */
void mvz_modules_after_fork_child(void)
{
    mvz_tls.internal++;
    for (size_t i = 0; i < nmods; i++)
        free(mods[i].path);
    nmods = 0;
    mvz_modules_scan();
    mvz_tls.internal--;
}
