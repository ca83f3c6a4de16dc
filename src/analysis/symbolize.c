/*
 * symbolize.c - offline symbolization of the return addresses in a trace with
 * elfutils' libdwfl: function names, inlined frames and file:line from DWARF
 * when debug info is there (also from /usr/lib/debug), the ELF symbol table
 * otherwise. Results are cached per address; every string handed out is
 * interned here and lives until mvz_symbolizer_free.
 */
#include "analysis/symbolize.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/sort.h"

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

/* libstdc++'s demangler, loaded the first time a name needs it: linked in,
 * libstdc++'s static initialisation made 860 KiB of every memviz process
 * resident, `memviz run` waiting for its program included. NULL when
 * libstdc++ cannot be loaded (names then stay mangled). */
static demangle_fn demangler(void)
{
    static demangle_fn fn;
    static int tried;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            fn = (demangle_fn)dlsym(h, "__cxa_demangle");
    }
    return fn;
}

/* Deeper inline chains are cut: the innermost frames matter most. */
#define SYMBOLIZE_MAX_DEPTH 64

/* A function symbol of a module's ELF symbol table, for binary search. */
struct symbolize_sym {
    uint64_t lo, hi;
    const char *name; /* in the ELF file's string table, owned by dwfl */
};

struct symbolize_module {
    char *path;
    uint64_t lo, hi, load_bias;
    uint8_t build_id[64];
    size_t build_id_len;
    int pending;                /* to be reported to libdwfl when first looked up in */
    int wanted;                 /* pending, and an address in it was looked up */
    Dwfl_Module *mod;           /* NULL when unreadable or its build-id differs */
    struct symbolize_sym *syms; /* sorted by lo; built on first use */
    size_t nsyms;
    int syms_built;
    struct symbolize_sym *objs; /* the same, for data objects (heap snapshots' roots) */
    size_t nobjs;
    int objs_built;
    int unreadable; /* the file could not be opened as an ELF object */
    int changed;    /* the file's build-id is not the one the trace recorded */
};

struct symbolize_entry {
    uint64_t address;
    uint32_t first; /* index into mvz_symbolizer.frames */
    uint32_t count; /* 0 marks an empty slot */
};

struct mvz_symbolizer {
    Dwfl *dwfl;
    struct symbolize_module *modules; /* sorted by lo */
    size_t nmodules, modules_cap;
    int wanted; /* pending modules an address was looked up in */
    struct symbolize_entry *cache;
    size_t cache_cap, cache_len;
    struct mvz_frame *frames;
    size_t nframes, frames_cap;
    char **strings; /* open-addressing set of interned strings */
    size_t strings_cap, strings_len;
};

/*
 * The main file is opened by path in dwfl_report_elf, so find_elf is only a
 * formality; find_debuginfo looks for .gnu_debuglink and build-id files.
 */
static char *debuginfo_path; /* NULL: elfutils' default, ":.debug:/usr/lib/debug" */

static Dwfl_Callbacks symbolize_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

int mvz_symbolize_add_debug_dir(const char *dir)
{
    /* Searched before the defaults: each directory as DIR/.build-id/xx/rest.debug
     * and for .gnu_debuglink files. */
    const char *rest = debuginfo_path ? debuginfo_path : ":.debug:/usr/lib/debug";
    char *p = NULL;
    if (asprintf(&p, "%s:%s", dir, rest[0] == ':' ? rest + 1 : rest) < 0)
        return -1;
    /* keep the leading ':' elfutils reads as "also the file's own directory" */
    char *q = NULL;
    if (asprintf(&q, ":%s", p) < 0) {
        free(p);
        return -1;
    }
    free(p);
    free(debuginfo_path);
    debuginfo_path = q;
    return 0;
}

static uint64_t symbolize_hash_str(const char *str)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

static uint64_t symbolize_hash_addr(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    return a;
}

static int symbolize_strings_grow(struct mvz_symbolizer *s)
{
    size_t cap = s->strings_cap ? s->strings_cap * 2 : 256;
    char **slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < s->strings_cap; i++) {
        char *str = s->strings[i];
        if (str == NULL)
            continue;
        size_t j = symbolize_hash_str(str) & (cap - 1);
        while (slots[j] != NULL)
            j = (j + 1) & (cap - 1);
        slots[j] = str;
    }
    free(s->strings);
    s->strings = slots;
    s->strings_cap = cap;
    return 0;
}

/* Returns a copy owned by s, the same pointer for equal strings; NULL on OOM. */
static const char *symbolize_intern(struct mvz_symbolizer *s, const char *str)
{
    if (str == NULL)
        return NULL;
    if ((s->strings_len + 1) * 2 > s->strings_cap && symbolize_strings_grow(s) != 0)
        return NULL;
    size_t mask = s->strings_cap - 1;
    size_t i = symbolize_hash_str(str) & mask;
    for (; s->strings[i] != NULL; i = (i + 1) & mask) {
        if (strcmp(s->strings[i], str) == 0)
            return s->strings[i];
    }
    s->strings[i] = strdup(str);
    if (s->strings[i] != NULL)
        s->strings_len++;
    return s->strings[i];
}

const char *mvz_symbolizer_demangle(struct mvz_symbolizer *s, const char *name)
{
    if (s == NULL || name == NULL || strncmp(name, "_Z", 2) != 0)
        return name;
    int status = -1;
    demangle_fn demangle = demangler();
    char *demangled = demangle ? demangle(name, NULL, NULL, &status) : NULL;
    const char *result = name;
    if (demangled != NULL && status == 0) {
        const char *interned = symbolize_intern(s, demangled);
        if (interned != NULL)
            result = interned;
    }
    free(demangled);
    return result;
}

/* Demangled and interned; "??" when there is no name (or no memory). */
static const char *symbolize_function_name(struct mvz_symbolizer *s, const char *raw)
{
    if (raw == NULL || raw[0] == '\0')
        return "??";
    const char *name = mvz_symbolizer_demangle(s, raw);
    if (name == raw)
        name = symbolize_intern(s, raw);
    return name != NULL ? name : "??";
}

struct mvz_symbolizer *mvz_symbolizer_new(void)
{
    struct mvz_symbolizer *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    /* NULL dwfl is tolerated: modules then only get their path. */
    s->dwfl = dwfl_begin(&symbolize_callbacks);
    return s;
}

void mvz_symbolizer_free(struct mvz_symbolizer *s)
{
    if (s == NULL)
        return;
    if (s->dwfl != NULL)
        dwfl_end(s->dwfl);
    for (size_t i = 0; i < s->nmodules; i++) {
        free(s->modules[i].path);
        free(s->modules[i].syms);
        free(s->modules[i].objs);
    }
    for (size_t i = 0; i < s->strings_cap; i++)
        free(s->strings[i]);
    free(s->modules);
    free(s->cache);
    free(s->frames);
    free(s->strings);
    free(s);
}

static int symbolize_build_id_matches(Dwfl_Module *mod, const uint8_t *id, size_t len)
{
    if (id == NULL || len == 0)
        return 1;
    const unsigned char *bits = NULL;
    GElf_Addr vaddr = 0;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    return n > 0 && (size_t)n == len && memcmp(bits, id, len) == 0;
}

/*
 * add_p_vaddr = true makes dwfl's bias exactly load_bias (dlpi_addr) even for
 * objects whose first PT_LOAD has a non-zero p_vaddr (prelinked libraries);
 * dwfl ignores the base for ET_EXEC, whose bias is 0 anyway.
 */
static int symbolize_modules_reserve(struct mvz_symbolizer *s)
{
    if (s->nmodules < s->modules_cap)
        return 0;
    size_t cap = s->modules_cap ? s->modules_cap * 2 : 16;
    struct symbolize_module *m = realloc(s->modules, cap * sizeof *m);
    if (m == NULL)
        return -1;
    s->modules = m;
    s->modules_cap = cap;
    return 0;
}

/* An address resolved before this module was known may now resolve differently. */
static void symbolize_cache_clear(struct mvz_symbolizer *s)
{
    if (s->cache != NULL)
        memset(s->cache, 0, s->cache_cap * sizeof *s->cache);
    s->cache_len = 0;
    s->nframes = 0;
}

static int symbolize_overlaps(const struct mvz_symbolizer *s, uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < s->nmodules; i++)
        if (lo < s->modules[i].hi && s->modules[i].lo < hi)
            return 1;
    return 0;
}

int mvz_symbolizer_add_module(struct mvz_symbolizer *s, const char *path, uint64_t load_bias,
                              uint64_t lo, uint64_t hi, const uint8_t *build_id,
                              size_t build_id_len)
{
    if (s == NULL || path == NULL || symbolize_modules_reserve(s) != 0)
        return -1;
    struct symbolize_module m = {.path = strdup(path), .lo = lo, .hi = hi, .load_bias = load_bias};
    if (m.path == NULL)
        return -1;
    if (build_id != NULL && build_id_len <= sizeof(m.build_id)) {
        memcpy(m.build_id, build_id, build_id_len);
        m.build_id_len = build_id_len;
    }
    /* Modules of one address space never overlap; a (damaged) trace that
     * says otherwise must not reach libdwfl, which then frees a module it
     * still hands out. The module keeps its name, not its symbols. */
    m.pending = !symbolize_overlaps(s, lo, hi) && lo < hi;

    size_t pos = s->nmodules;
    while (pos > 0 && s->modules[pos - 1].lo > lo)
        pos--;
    memmove(&s->modules[pos + 1], &s->modules[pos], (s->nmodules - pos) * sizeof m);
    s->modules[pos] = m;
    s->nmodules++;
    symbolize_cache_clear(s);
    return access(path, R_OK) == 0 ? 0 : -1;
}

/* Reports the wanted modules to libdwfl, in one batch. Only modules that
 * an address was looked up in are opened: a trace can name thousands of
 * modules (a program that dlopens in a loop) of which its stacks touch a
 * few, and each would cost an open and a mapping of its file. Batches
 * matter too: dwfl_report_end re-sorts every module reported so far. */
static void symbolize_report_wanted(struct mvz_symbolizer *s)
{
    if (!s->wanted || s->dwfl == NULL)
        return;
    s->wanted = 0;
    dwfl_report_begin_add(s->dwfl);
    for (size_t i = 0; i < s->nmodules; i++) {
        struct symbolize_module *m = &s->modules[i];
        if (!m->wanted)
            continue;
        m->pending = m->wanted = 0;
        /* The path comes from the trace: open(2) of a FIFO would block
         * forever, so only a regular file reaches libdwfl, which owns the
         * descriptor when it returns a module. */
        int fd = open(m->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            fd = -1;
        }
        Dwfl_Module *mod =
            fd < 0 ? NULL : dwfl_report_elf(s->dwfl, m->path, m->path, fd, m->load_bias, true);
        if (fd >= 0 && mod == NULL)
            close(fd);
        if (mod != NULL &&
            symbolize_build_id_matches(mod, m->build_id_len ? m->build_id : NULL, m->build_id_len))
            m->mod = mod;
        else if (mod != NULL)
            m->changed = 1;
        else
            m->unreadable = 1;
    }
    if (dwfl_report_end(s->dwfl, NULL, NULL) != 0)
        for (size_t i = 0; i < s->nmodules; i++)
            s->modules[i].mod = NULL;
}

static void symbolize_build_syms(struct symbolize_module *m);
static struct symbolize_module *symbolize_find_module(const struct mvz_symbolizer *s, uint64_t a);

/* The module holding a, or NULL; marked for the next report to libdwfl if
 * it is still pending. */
static struct symbolize_module *symbolize_want(struct mvz_symbolizer *s, uint64_t a)
{
    struct symbolize_module *m = symbolize_find_module(s, a);
    if (m != NULL && m->pending && !m->wanted) {
        m->wanted = 1;
        s->wanted++;
    }
    return m;
}

/* Does ahead of time what the first lookups in the modules holding the
 * given addresses would: report the modules, open their DWARF
 * (decompressing a distribution's debug sections, most of a small
 * report's time) and read their symbol tables. */
void mvz_symbolizer_warm(struct mvz_symbolizer *s, const uint64_t *addrs, size_t n)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        symbolize_want(s, addrs[i]);
    symbolize_report_wanted(s);
    for (size_t i = 0; i < n; i++) {
        struct symbolize_module *m = symbolize_find_module(s, addrs[i]);
        Dwarf_Addr bias;
        if (m != NULL && m->mod != NULL && !m->syms_built) {
            dwfl_module_getdwarf(m->mod, &bias);
            symbolize_build_syms(m);
        }
    }
}

static struct symbolize_module *symbolize_find_module(const struct mvz_symbolizer *s, uint64_t a)
{
    size_t l = 0, r = s->nmodules;
    while (l < r) {
        size_t mid = l + (r - l) / 2;
        if (s->modules[mid].lo <= a)
            l = mid + 1;
        else
            r = mid;
    }
    /* Walking further down only matters when ranges overlap. */
    for (size_t i = l; i-- > 0;) {
        if (a < s->modules[i].hi)
            return &s->modules[i];
    }
    return NULL;
}

static void symbolize_source(struct mvz_symbolizer *s, Dwfl_Module *mod, uint64_t a,
                             struct mvz_frame *f)
{
    Dwfl_Line *line = dwfl_module_getsrc(mod, a);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (file == NULL)
        return;
    f->file = symbolize_intern(s, file);
    f->line = lineno > 0 && f->file != NULL ? (unsigned)lineno : 0;
}

static int symbolize_sym_cmp(const void *x, const void *y)
{
    const struct symbolize_sym *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Collects the module's function symbols once, sorted: dwfl_module_addrinfo
 * scans the whole symbol table on every call, which cost more than the
 * rest of a report on programs like cc1plus. Symbols without a size end
 * where the next one starts. */
static size_t symbolize_build_table(struct symbolize_module *m, int objects,
                                    struct symbolize_sym **out)
{
    int n = dwfl_module_getsymtab(m->mod);
    struct symbolize_sym *v = n > 0 ? malloc((size_t)n * sizeof(*v)) : NULL;
    size_t k = 0;
    for (int i = 1; v && i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, NULL, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info);
        int want = objects ? type == STT_OBJECT : type == STT_FUNC || type == STT_GNU_IFUNC;
        if (name == NULL || *name == 0 || addr == 0 || !want)
            continue;
        v[k++] = (struct symbolize_sym){addr, addr + sym.st_size, name};
    }
    mvz_sort(v, k, sizeof(*v), symbolize_sym_cmp);
    for (size_t i = 0; i < k; i++)
        if (v[i].hi == v[i].lo)
            v[i].hi = i + 1 < k ? v[i + 1].lo : v[i].lo + 1;
    *out = v;
    return k;
}

static void symbolize_build_syms(struct symbolize_module *m)
{
    m->syms_built = 1;
    m->nsyms = symbolize_build_table(m, 0, &m->syms);
}

static const struct symbolize_sym *symbolize_find(const struct symbolize_sym *v, size_t n,
                                                  uint64_t a)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 || a >= v[lo - 1].hi ? NULL : &v[lo - 1];
}

static const char *symbolize_symtab_name(struct symbolize_module *m, uint64_t a)
{
    if (!m->syms_built)
        symbolize_build_syms(m);
    const struct symbolize_sym *f = symbolize_find(m->syms, m->nsyms, a);
    return f ? f->name : NULL;
}

static const char *symbolize_die_name(Dwarf_Die *die)
{
    static const int attrs[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        Dwarf_Attribute attr;
        const char *name = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &attr));
        if (name != NULL && name[0] != '\0')
            return name;
    }
    return NULL;
}

static int symbolize_is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram ||
           tag == DW_TAG_entry_point;
}

/* The file:line in the caller where the inlined_subroutine DIE was expanded. */
static void symbolize_call_site(struct mvz_symbolizer *s, Dwarf_Die *inlined, struct mvz_frame *f)
{
    Dwarf_Attribute attr;
    Dwarf_Word value;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0)
        f->line = (unsigned)value;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) != 0)
        return;
    Dwarf_Die cu;
    Dwarf_Files *files;
    size_t nfiles = 0;
    if (dwarf_diecu(inlined, &cu, NULL, NULL) == NULL ||
        dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || value >= nfiles)
        return;
    f->file = symbolize_intern(s, dwarf_filesrc(files, value, NULL, NULL));
}

/*
 * dwarf_getscopes continues an inlined instance with the scopes around its
 * abstract definition; the physical nesting of the innermost DIE is what
 * leads to the callers, so it is fetched again with dwarf_getscopes_die (as
 * eu-addr2line -i does). Returns the count; *scopes must be freed.
 */
static int symbolize_scopes(Dwfl_Module *mod, uint64_t a, Dwarf_Die **scopes)
{
    *scopes = NULL;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &bias);
    if (cu == NULL)
        return 0;
    Dwarf_Die *pc_scopes = NULL;
    int n = dwarf_getscopes(cu, a - bias, &pc_scopes);
    if (n <= 0) {
        free(pc_scopes);
        return 0;
    }
    Dwarf_Die innermost = pc_scopes[0];
    free(pc_scopes);
    n = dwarf_getscopes_die(&innermost, scopes);
    if (n <= 0) {
        free(*scopes);
        *scopes = NULL;
        return 0;
    }
    return n;
}

/*
 * Fills out[] with the function scopes around a, innermost first, ending at
 * the first real subprogram. out[0]'s file:line is already set by the line
 * table; each outer frame gets the call site of the frame it contains.
 */
static int symbolize_inline_chain(struct mvz_symbolizer *s, Dwarf_Die *scopes, int nscopes,
                                  struct mvz_frame *out, int max)
{
    int n = 0;
    for (int i = 0; i < nscopes && n < max; i++) {
        Dwarf_Die *die = &scopes[i];
        if (!symbolize_is_function(die))
            continue;
        out[n].function = symbolize_function_name(s, symbolize_die_name(die));
        out[n].inlined = dwarf_tag(die) == DW_TAG_inlined_subroutine;
        n++;
        if (!out[n - 1].inlined)
            break;
        if (n < max)
            symbolize_call_site(s, die, &out[n]);
    }
    return n;
}

static void symbolize_unknown(struct mvz_frame *f, uint64_t ret, const char *module)
{
    *f = (struct mvz_frame){.function = "??", .module = module, .address = ret};
}

/* A frame no symbol names: its module and its return address in the
 * module's own addresses (what addr2line and objdump take), so that every
 * unknown frame stays apart in every view and export, the same from run
 * to run; and why, when the module could not be read as it was. */
static const char *symbolize_offset_name(struct mvz_symbolizer *s, const struct symbolize_module *m,
                                         uint64_t ret)
{
    char name[512];
    const char *base = strrchr(m->path, '/');
    snprintf(name, sizeof(name), "%s+0x%" PRIx64 "%s", base ? base + 1 : m->path,
             ret - m->load_bias,
             m->changed                           ? " (build-id differs from the file on disk)"
             : m->unreadable && m->path[0] == '/' ? " (file not readable)"
                                                  : ""); /* the vdso has no file */
    return symbolize_function_name(s, name);
}

const char *mvz_symbolize_data(struct mvz_symbolizer *s, uint64_t addr, uint64_t *offset)
{
    struct symbolize_module *m = (struct symbolize_module *)symbolize_want(s, addr);
    symbolize_report_wanted(s);
    if (m == NULL || m->mod == NULL)
        return NULL;
    if (!m->objs_built) {
        m->objs_built = 1;
        m->nobjs = symbolize_build_table(m, 1, &m->objs);
    }
    const struct symbolize_sym *o = symbolize_find(m->objs, m->nobjs, addr);
    if (o == NULL)
        return NULL;
    *offset = addr - o->lo;
    return symbolize_function_name(s, o->name);
}

Dwarf *mvz_symbolize_dwarf(struct mvz_symbolizer *s, uint64_t addr, uint64_t *bias)
{
    struct symbolize_module *m = symbolize_want(s, addr);
    symbolize_report_wanted(s);
    Dwarf_Addr b = 0;
    Dwarf *dw = m && m->mod ? dwfl_module_getdwarf(m->mod, &b) : NULL;
    *bias = b;
    return dw;
}

static int symbolize_resolve(struct mvz_symbolizer *s, uint64_t ret, struct mvz_frame *out, int max)
{
    uint64_t a = ret - 1;
    const struct symbolize_module *m = symbolize_want(s, a);
    symbolize_report_wanted(s);
    for (int i = 0; i < max; i++)
        symbolize_unknown(&out[i], ret, m ? m->path : NULL);
    if (m == NULL)
        return 1;
    if (m->mod == NULL) {
        out[0].function = symbolize_offset_name(s, m, ret);
        return 1;
    }

    symbolize_source(s, m->mod, a, &out[0]);
    Dwarf_Die *scopes = NULL;
    int nscopes = symbolize_scopes(m->mod, a, &scopes);
    int n = symbolize_inline_chain(s, scopes, nscopes, out, max);
    free(scopes);
    if (n == 0)
        n = 1;
    /* Programs without debug info still have ELF symbols for the real function. */
    struct mvz_frame *outer = &out[n - 1];
    if (!outer->inlined && strcmp(outer->function, "??") == 0)
        outer->function =
            symbolize_function_name(s, symbolize_symtab_name((struct symbolize_module *)m, a));
    if (strcmp(outer->function, "??") == 0)
        outer->function = symbolize_offset_name(s, m, ret);
    return n;
}

static int symbolize_cache_grow(struct mvz_symbolizer *s)
{
    size_t cap = s->cache_cap ? s->cache_cap * 2 : 1024;
    struct symbolize_entry *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < s->cache_cap; i++) {
        struct symbolize_entry *e = &s->cache[i];
        if (e->count == 0)
            continue;
        size_t j = symbolize_hash_addr(e->address) & (cap - 1);
        while (slots[j].count != 0)
            j = (j + 1) & (cap - 1);
        slots[j] = *e;
    }
    free(s->cache);
    s->cache = slots;
    s->cache_cap = cap;
    return 0;
}

/* The slot for ret: its entry, or the empty slot where it belongs. */
static struct symbolize_entry *symbolize_cache_slot(struct mvz_symbolizer *s, uint64_t ret)
{
    if (s->cache_cap == 0)
        return NULL;
    size_t mask = s->cache_cap - 1;
    size_t i = symbolize_hash_addr(ret) & mask;
    while (s->cache[i].count != 0 && s->cache[i].address != ret)
        i = (i + 1) & mask;
    return &s->cache[i];
}

static int symbolize_frames_reserve(struct mvz_symbolizer *s, size_t n)
{
    if (s->nframes + n <= s->frames_cap)
        return 0;
    size_t cap = s->frames_cap ? s->frames_cap : 1024;
    while (cap < s->nframes + n)
        cap *= 2;
    if (cap > UINT32_MAX)
        return -1;
    struct mvz_frame *frames = realloc(s->frames, cap * sizeof *frames);
    if (frames == NULL)
        return -1;
    s->frames = frames;
    s->frames_cap = cap;
    return 0;
}

/* Failing to cache (no memory) only costs a later re-resolve. */
static void symbolize_cache_put(struct mvz_symbolizer *s, uint64_t ret,
                                const struct mvz_frame *frames, int n)
{
    if ((s->cache_len + 1) * 2 > s->cache_cap && symbolize_cache_grow(s) != 0)
        return;
    if (symbolize_frames_reserve(s, (size_t)n) != 0)
        return;
    struct symbolize_entry *e = symbolize_cache_slot(s, ret);
    *e = (struct symbolize_entry){
        .address = ret, .first = (uint32_t)s->nframes, .count = (uint32_t)n};
    memcpy(&s->frames[s->nframes], frames, (size_t)n * sizeof *frames);
    s->nframes += (size_t)n;
    s->cache_len++;
}

static int symbolize_copy(struct mvz_frame *out, int max, const struct mvz_frame *frames, int n)
{
    if (n > max)
        n = max;
    memcpy(out, frames, (size_t)n * sizeof *out);
    return n;
}

int mvz_symbolize(struct mvz_symbolizer *s, uint64_t return_address, struct mvz_frame *out, int max)
{
    if (out == NULL || max < 1)
        return 0;
    if (s == NULL) {
        symbolize_unknown(out, return_address, NULL);
        return 1;
    }
    const struct symbolize_entry *e = symbolize_cache_slot(s, return_address);
    if (e != NULL && e->count != 0)
        return symbolize_copy(out, max, &s->frames[e->first], (int)e->count);

    struct mvz_frame frames[SYMBOLIZE_MAX_DEPTH];
    int n = symbolize_resolve(s, return_address, frames, SYMBOLIZE_MAX_DEPTH);
    symbolize_cache_put(s, return_address, frames, n);
    return symbolize_copy(out, max, frames, n);
}
