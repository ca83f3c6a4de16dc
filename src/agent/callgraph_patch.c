/*
 * callgraph_patch.c - the call graph of programs built with
 * -fpatchable-function-entry=N (N >= 5): the compiler leaves N one-byte
 * nops at every function's entry and lists the entries in the section
 * __patchable_function_entries; at load time (the program at start, a
 * library when dlopen returns) the entries of the functions that match
 * --callgraph-filter (MEMVIZ_CALLGRAPH_FILTER: shell patterns, comma
 * separated; all when unset) get a 5-byte call in place of their first
 * nops. A call reaches only 2 GiB, so each patched object gets a stub page
 * near its code that jumps on to the __fentry__ hook (callgraph_pg.c):
 * the stack at a patched entry is what __fentry__ sees.
 *
 * Names come from the object's symbol table, read from its file; entries
 * whose bytes are not five nops (M > 0 puts the sled before the entry
 * symbol, which no call runs) are left alone, as is everything when the
 * code cannot be made writable.
 */
#include <elf.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/callgraph.h"

#define PATCHED_MAX 256 /* objects patched */
#define SLED 5          /* a call rel32 */

void mvz_cg_fentry_entry(void);
static uintptr_t patched[PATCHED_MAX]; /* load biases of the objects done */
static size_t npatched;
static uint64_t functions_patched;

/* An object's file, mapped whole, with its section headers. */
struct elf_file {
    const uint8_t *data;
    size_t size;
    const Elf64_Shdr *sh;
    size_t nsh;
};

static int elf_open(struct elf_file *f, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    memset(f, 0, sizeof(*f));
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(Elf64_Ehdr)) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            f->data = p;
            f->size = (size_t)st.st_size;
        }
    }
    close(fd);
    if (!f->data)
        return -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->data;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > f->size ||
        (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > f->size - eh->e_shoff ||
        eh->e_shstrndx >= eh->e_shnum) {
        munmap((void *)f->data, f->size);
        f->data = NULL;
        return -1;
    }
    f->sh = (const Elf64_Shdr *)(f->data + eh->e_shoff);
    f->nsh = eh->e_shnum;
    return 0;
}

static void elf_close(struct elf_file *f)
{
    if (f->data)
        munmap((void *)f->data, f->size);
}

static const char *section_name(const struct elf_file *f, const Elf64_Shdr *s)
{
    const Elf64_Shdr *names = &f->sh[((const Elf64_Ehdr *)f->data)->e_shstrndx];
    if (names->sh_offset > f->size || s->sh_name >= names->sh_size ||
        names->sh_size > f->size - names->sh_offset)
        return "";
    const char *p = (const char *)f->data + names->sh_offset + s->sh_name;
    return memchr(p, 0, names->sh_size - s->sh_name) ? p : "";
}

static const Elf64_Shdr *section_by_name(const struct elf_file *f, const char *name)
{
    for (size_t i = 0; i < f->nsh; i++)
        if (!strcmp(section_name(f, &f->sh[i]), name))
            return &f->sh[i];
    return NULL;
}

/* The name of the function whose symbol starts at vaddr, or NULL. */
static const char *function_at(const struct elf_file *f, uint64_t vaddr)
{
    for (size_t i = 0; i < f->nsh; i++) {
        const Elf64_Shdr *s = &f->sh[i];
        if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) || s->sh_link >= f->nsh ||
            s->sh_offset > f->size || s->sh_size > f->size - s->sh_offset)
            continue;
        const Elf64_Shdr *str = &f->sh[s->sh_link];
        if (str->sh_offset > f->size || str->sh_size > f->size - str->sh_offset)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(f->data + s->sh_offset);
        for (size_t k = 0; k < s->sh_size / sizeof(*sym); k++)
            if (sym[k].st_value == vaddr && ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC &&
                sym[k].st_name < str->sh_size)
                return (const char *)f->data + str->sh_offset + sym[k].st_name;
    }
    return NULL;
}

/* Whether name matches one of the comma-separated patterns (all: NULL). */
static int selected(const char *filter, const char *name)
{
    if (!filter || !*filter)
        return 1;
    if (!name)
        return 0;
    char pat[256];
    for (const char *p = filter; *p;) {
        size_t n = strcspn(p, ",");
        if (n < sizeof(pat)) {
            memcpy(pat, p, n);
            pat[n] = 0;
            if (fnmatch(pat, name, 0) == 0)
                return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

/* A page within a call's reach of [lo, hi) holding a jump to the hook. */
static uint8_t *stub_near(uintptr_t lo, uintptr_t hi)
{
    long page = sysconf(_SC_PAGESIZE);
    for (uintptr_t step = 1u << 20; step < (1u << 30); step += 1u << 20) {
        for (int up = 0; up < 2; up++) {
            uintptr_t at = up ? ((hi + step) & ~(uintptr_t)(page - 1))
                              : ((lo - step) & ~(uintptr_t)(page - 1));
            if (!up && lo < step + (uintptr_t)page)
                continue;
            void *p = mmap((void *)at, (size_t)page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (p == MAP_FAILED)
                continue;
            if (p != (void *)at) {
                munmap(p, (size_t)page);
                continue;
            }
            uint8_t *s = p; /* jmp *0(%rip); .quad hook */
            static const uint8_t jmp[6] = {0xff, 0x25, 0, 0, 0, 0};
            memcpy(s, jmp, sizeof(jmp));
            uintptr_t hook = (uintptr_t)mvz_cg_fentry_entry;
            memcpy(s + sizeof(jmp), &hook, sizeof(hook));
            if (mprotect(p, (size_t)page, PROT_READ | PROT_EXEC) == 0) {
                mvz_owned_map(p, (size_t)page);
                return s;
            }
            munmap(p, (size_t)page);
            return NULL;
        }
    }
    return NULL;
}

/* Writes a call to stub over the sled at entry. */
static int patch_one(uintptr_t entry, const uint8_t *stub)
{
    static const uint8_t nops[SLED] = {0x90, 0x90, 0x90, 0x90, 0x90};
    int64_t rel = (int64_t)((uintptr_t)stub - (entry + SLED));
    if (memcmp((const void *)entry, nops, SLED) || rel != (int32_t)rel)
        return 0;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = entry & ~(uintptr_t)(page - 1);
    size_t len = (entry + SLED - first + (size_t)page - 1) & ~(size_t)(page - 1);
    if (mprotect((void *)first, len, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
        return -1;
    uint8_t call[SLED] = {0xe8};
    int32_t r = (int32_t)rel;
    memcpy(call + 1, &r, sizeof(r));
    memcpy((void *)entry, call, SLED);
    mprotect((void *)first, len, PROT_READ | PROT_EXEC);
    return 1;
}

static void patch_object(const struct dl_phdr_info *info, const char *filter)
{
    const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
    struct elf_file f;
    if (elf_open(&f, path) < 0)
        return;
    const Elf64_Shdr *s = section_by_name(&f, "__patchable_function_entries");
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
            uintptr_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            lo = a < lo ? a : lo;
            hi = a + info->dlpi_phdr[i].p_memsz > hi ? a + info->dlpi_phdr[i].p_memsz : hi;
        }
    const uint8_t *stub = s && s->sh_size && lo < hi ? stub_near(lo, hi) : NULL;
    /* the section's words, relocated in memory: the entries' addresses */
    const uintptr_t *entries = stub ? (const uintptr_t *)(info->dlpi_addr + s->sh_addr) : NULL;
    for (size_t i = 0; entries && i < s->sh_size / sizeof(*entries); i++) {
        uintptr_t e = entries[i];
        if (e < lo || e + SLED > hi || !selected(filter, function_at(&f, e - info->dlpi_addr)))
            continue;
        int rc = patch_one(e, stub);
        if (rc < 0)
            break; /* the code cannot be made writable */
        functions_patched += (uint64_t)rc;
    }
    elf_close(&f);
}

static int patch_each(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    for (size_t i = 0; i < npatched; i++)
        if (patched[i] == info->dlpi_addr)
            return 0;
    if (npatched == PATCHED_MAX ||
        mvz_modules_is_agent(info->dlpi_addr + info->dlpi_phdr[0].p_vaddr))
        return 0;
    patched[npatched++] = info->dlpi_addr;
    patch_object(info, arg);
    return 0;
}

/* At start and after each dlopen: the objects not seen yet. */
void mvz_callgraph_patch(void)
{
    if (!mvz_cg_on)
        return;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    mvz_tls.internal++;
    pthread_mutex_lock(&lock);
    dl_iterate_phdr(patch_each, getenv("MEMVIZ_CALLGRAPH_FILTER"));
    pthread_mutex_unlock(&lock);
    mvz_tls.internal--;
}
