/*
 * instrumentation.c - finds the call instrumentation an ELF program was
 * built with, by the hooks its code calls (undefined or defined symbols of
 * its symbol tables) and the section -fpatchable-function-entry leaves.
 */
#include "analysis/instrumentation.h"

#include <fcntl.h>
#include <gelf.h>
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

static int section_bits(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
    int bits = 0;
    Elf_Data *d = elf_getdata(scn, NULL);
    size_t n = d && sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym))
            break;
        const char *name = elf_strptr(e, sh->sh_link, sym.st_name);
        if (name)
            bits |= symbol_bit(name);
    }
    return bits;
}

int mvz_instrumentation(const char *path)
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
                bits |= section_bits(e, scn, &sh);
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return bits;
}
