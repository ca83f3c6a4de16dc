/*
 * symbolize.h - turn return addresses from a trace into function, source
 * file:line and module, with inlined frames, offline (after the run).
 *
 * A symbolizer describes one address-space layout: the set of modules that
 * were mapped at the same time (one "generation" of the trace; a dlclose
 * starts a new generation). The analysis creates one symbolizer per
 * generation it needs. Modules are found by path; when the file on disk has a
 * different build-id than the trace recorded, its symbols are not trusted and
 * the frame is reported by module and offset only.
 */
#ifndef MVZ_ANALYSIS_SYMBOLIZE_H
#define MVZ_ANALYSIS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct mvz_frame {
    const char *function; /* demangled; "??" when unknown; never NULL */
    const char *file;     /* source file, or NULL when unknown */
    unsigned line;        /* 0 when unknown */
    const char *module;   /* path of the ELF object, or NULL when no module covers the address */
    uint64_t address;     /* the return address this frame came from */
    int inlined;          /* 1 when this frame was inlined into the next (outer) one */
};

struct mvz_symbolizer;

/* Also looks for separate debug files under dir (DIR/.build-id/xx/rest.debug,
 * and .gnu_debuglink names), before /usr/lib/debug. For all symbolizers made
 * after the call. Returns 0, or -1 when out of memory. */
int mvz_symbolize_add_debug_dir(const char *dir);
struct mvz_symbolizer *mvz_symbolizer_new(void);
void mvz_symbolizer_free(struct mvz_symbolizer *s);

/*
 * Adds one module. load_bias is the difference between run-time and ELF
 * virtual addresses (dl_iterate_phdr's dlpi_addr); [lo, hi) is the run-time
 * address range it covered. build_id may be NULL (len 0) when unknown.
 * Returns 0, or -1 when the file cannot be opened or read (the module is still
 * remembered, so its frames get the module name).
 */
int mvz_symbolizer_add_module(struct mvz_symbolizer *s, const char *path, uint64_t load_bias,
                              uint64_t lo, uint64_t hi, const uint8_t *build_id,
                              size_t build_id_len);

/*
 * Resolves one return address (the address after a call instruction; the
 * symbolizer looks up address - 1). Fills out[0..n) innermost first: inlined
 * frames (inlined = 1) come before the function they were inlined into.
 * Returns n >= 1 (at most max). Strings stay valid until mvz_symbolizer_free.
 * Results are cached per address.
 */
/* Opens the debugging information of the modules holding addrs now rather
 * than at their first lookup (see symbols.h: done while a trace is
 * replayed). */
void mvz_symbolizer_warm(struct mvz_symbolizer *s, const uint64_t *addrs, size_t n);
/* The data object (a global or static variable) at addr, its name (valid
 * as long as s), and addr's offset in it; NULL when no symbol covers it. */
const char *mvz_symbolize_data(struct mvz_symbolizer *s, uint64_t addr, uint64_t *offset);
/* The DWARF of the module holding addr, and the bias of its addresses
 * (run-time address = DWARF address + bias); NULL when it has none. */
typedef struct Dwarf Dwarf;
Dwarf *mvz_symbolize_dwarf(struct mvz_symbolizer *s, uint64_t addr, uint64_t *bias);
int mvz_symbolize(struct mvz_symbolizer *s, uint64_t return_address, struct mvz_frame *out,
                  int max);

/* Demangles a C++ name; returns name itself when it is not mangled. The
 * result stays valid until mvz_symbolizer_free. */
const char *mvz_symbolizer_demangle(struct mvz_symbolizer *s, const char *name);

#endif
