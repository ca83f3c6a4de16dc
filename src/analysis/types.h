/*
 * types.h - the type of a heap block, where DWARF can tell it, and the
 * block printed as that type (`memviz inspect`).
 *
 * Two ways, tried in this order:
 *   - a C++ object with virtual functions: its first word points into a
 *     vtable ("vtable for Foo"), so it is a Foo (its dynamic type);
 *   - a typed pointer: walking the shortest path from a root, a global
 *     variable's DWARF type says what its word points to (struct entry *),
 *     the member of that struct at the next pointer's offset says what the
 *     next block is, and so on down to the block.
 */
#ifndef MVZ_ANALYSIS_TYPES_H
#define MVZ_ANALYSIS_TYPES_H

#include <stdint.h>
#include <stdio.h>

#include <elfutils/libdw.h>

#include "analysis/replay.h"
#include "analysis/retain.h"
#include "analysis/snapshot.h"
#include "analysis/symbols.h"

struct mvz_json;

struct mvz_typed {
    int type;       /* a type was found (die is valid while the symbols are) */
    Dwarf_Die die;  /* the element type, typedefs and qualifiers stripped */
    uint64_t elem;  /* its size */
    uint64_t count; /* elements in the block (an array when more than 1) */
    char name[256]; /* "struct entry", "Derived" */
    char how[512];  /* "its vtable (vtable for Derived)", "the path from g_table" */
    uint64_t size;  /* the block's */
};

/* Finds the type of block b of r's snapshot; bytes and known (NULL: not
 * stored) give its first word, for the vtable. t->type stays 0 when no
 * type is found. */
void mvz_typed_find(struct mvz_typed *t, const struct mvz_trace *tr, struct mvz_symbols *sym,
                    const struct mvz_retain *r, uint32_t b, const uint8_t *bytes,
                    const uint8_t *known);
/* The block as that type: each member, its offset, type and (with bytes,
 * where known[] says they are stored) value. */
void mvz_typed_print(const struct mvz_typed *t, FILE *out, const uint8_t *bytes,
                     const uint8_t *known);
void mvz_typed_json(const struct mvz_typed *t, struct mvz_json *j, const uint8_t *bytes,
                    const uint8_t *known);
void mvz_typed_free(struct mvz_typed *t);

#endif
