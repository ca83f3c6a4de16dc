/*
 * instrumentation.c - finds the call instrumentation an ELF program was
 * built with, by the hooks its code calls (undefined or defined symbols of
 * its symbol tables) and the section -fpatchable-function-entry leaves;
 * and that of the shared libraries it needs, found as the dynamic loader
 * finds them (minus its cache: libraries in the cache's other directories
 * are not looked at).
 */
#include "analysis/instrumentation.h"

#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int symbol_bit(const char *name)
{
    if (!strcmp(name, "__cyg_profile_func_enter"))
        return MVZ_INSTR_CYG;
    if (!strcmp(name, "mcount") || !strcmp(name, "_mcount"))
        return MVZ_INSTR_MCOUNT;
    if (!strcmp(name, "__fentry__"))
        return MVZ_INSTR_FENTRY;
    return 0;
}

/* undefined_only: count only the hooks the code calls out to (a library
 * built with the instrumentation), not ones it defines (libc's mcount). */
static int section_bits(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, int undefined_only)
{
    int bits = 0;
    Elf_Data *d = elf_getdata(scn, NULL);
    size_t n = d && sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym))
            break;
        const char *name = elf_strptr(e, sh->sh_link, sym.st_name);
        if (name && (!undefined_only || sym.st_shndx == SHN_UNDEF))
            bits |= symbol_bit(name);
    }
    return bits;
}

/* The needed libraries and library paths of an ELF file's dynamic
 * section, at most NEEDED_MAX of them. */
#define NEEDED_MAX 64
struct dyn_info {
    char *needed[NEEDED_MAX];
    int n;
    char *rpath, *runpath; /* malloc'd; NULL: none */
};

static void read_dynamic(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct dyn_info *di)
{
    Elf_Data *d = elf_getdata(scn, NULL);
    size_t n = d && sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
            break;
        if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
            continue;
        const char *s = elf_strptr(e, sh->sh_link, dyn.d_un.d_val);
        if (!s)
            continue;
        if (dyn.d_tag == DT_NEEDED && di->n < NEEDED_MAX)
            di->needed[di->n++] = strdup(s);
        else if (dyn.d_tag == DT_RPATH && !di->rpath)
            di->rpath = strdup(s);
        else if (dyn.d_tag == DT_RUNPATH && !di->runpath)
            di->runpath = strdup(s);
    }
}

static void dyn_info_free(struct dyn_info *di)
{
    for (int i = 0; i < di->n; i++)
        free(di->needed[i]);
    free(di->rpath);
    free(di->runpath);
}

/* The MVZ_INSTR_* bits of the ELF file at path, -1 if it is not one; its
 * dynamic section's entries into *di when di is not NULL. */
static int elf_bits(const char *path, int undefined_only, struct dyn_info *di)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    size_t shstrndx;
    int bits = -1;
    if (e && elf_kind(e) == ELF_K_ELF && elf_getshdrstrndx(e, &shstrndx) == 0) {
        bits = 0;
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh))
                continue;
            const char *name = elf_strptr(e, shstrndx, sh.sh_name);
            if (name && !strcmp(name, "__patchable_function_entries"))
                bits |= MVZ_INSTR_PATCHABLE;
            if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
                bits |= section_bits(e, scn, &sh, undefined_only);
            if (sh.sh_type == SHT_DYNAMIC && di)
                read_dynamic(e, scn, &sh, di);
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return bits;
}

int mvz_instrumentation(const char *path)
{
    return elf_bits(path, 0, NULL);
}

/* Library `name` in the colon-separated directories of list ($ORIGIN:
 * origin) into out; 1 when found. */
static int find_in(const char *list, const char *origin, const char *name, char *out, size_t size)
{
    while (list && *list) {
        size_t len = strcspn(list, ":");
        char dir[PATH_MAX];
        if (len >= 7 && !strncmp(list, "$ORIGIN", 7))
            snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 7), list + 7);
        else if (len >= 9 && !strncmp(list, "${ORIGIN}", 9))
            snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 9), list + 9);
        else
            snprintf(dir, sizeof(dir), "%.*s", (int)len, list);
        if (snprintf(out, size, "%s/%s", *dir ? dir : ".", name) < (int)size &&
            access(out, R_OK) == 0)
            return 1;
        list += len + (list[len] == ':');
    }
    return 0;
}

/* Where the dynamic loader finds needed library `name` of a program in
 * directory origin (its cache aside); 1 when found. */
static int find_library(const char *name, const struct dyn_info *di, const char *origin, char *out,
                        size_t size)
{
    static const char defaults[] = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:"
                                   "/lib64:/usr/lib64:/lib:/usr/lib";
    if (strchr(name, '/')) {
        snprintf(out, size, "%s", name);
        return access(out, R_OK) == 0;
    }
    return (!di->runpath && find_in(di->rpath, origin, name, out, size)) ||
           find_in(getenv("LD_LIBRARY_PATH"), origin, name, out, size) ||
           find_in(di->runpath, origin, name, out, size) ||
           find_in(defaults, origin, name, out, size);
}

int mvz_program_instrumentation(const char *path)
{
    struct dyn_info di = {0};
    int bits = elf_bits(path, 0, &di);
    if (bits == 0) {
        char origin[PATH_MAX];
        snprintf(origin, sizeof(origin), "%s", path);
        char *slash = strrchr(origin, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(origin, sizeof(origin), ".");
        for (int i = 0; i < di.n; i++) {
            char lib[PATH_MAX];
            if (!find_library(di.needed[i], &di, origin, lib, sizeof(lib)))
                continue;
            int b = elf_bits(lib, 1, NULL);
            if (b > 0)
                bits |= b;
        }
    }
    dyn_info_free(&di);
    return bits;
}
