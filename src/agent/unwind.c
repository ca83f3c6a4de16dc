/*
 * unwind.c - a fast stack unwinder for x86-64 driven by the DWARF call frame
 * information in .eh_frame (the tables C++ exceptions use), so it works
 * through code built without frame pointers, as all of Debian's libraries are.
 *
 * For each return address it works out once a compact rule - where the
 * caller's frame (the CFA) is, as RSP or RBP plus an offset, and where RBP
 * was saved - and caches it per thread. Unwinding one frame is then a cache
 * lookup and two loads. Frames this rule cannot express (signal trampolines,
 * DWARF expressions, a CFA in another register) make the caller fall back to
 * libunwind for that stack, so the fast path never guesses.
 *
 * Objects are found with _dl_find_object (glibc 2.35+: lock-free and
 * async-signal-safe), FDEs with the binary-search table of .eh_frame_hdr.
 */
#include <dlfcn.h>
#include <sys/mman.h>
#include <stdint.h>
#include <string.h>

#include "agent/agent.h"

#if defined(__x86_64__)

enum rule_kind { RULE_NONE = 0, RULE_OK = 1, RULE_END = 2, RULE_UNSUPPORTED = 3 };

/* A rule packed into 64 bits: kind (2 bits), CFA from RBP (1), RBP saved
 * (1), RBP's offset from the CFA (16), the CFA offset (32). */
typedef uint64_t rule_t;

static rule_t rule_make(int kind, int cfa_rbp, int rbp_saved, int32_t rbp_off, int32_t cfa_off)
{
    return (uint64_t)kind | (uint64_t)cfa_rbp << 2 | (uint64_t)rbp_saved << 3 |
           (uint64_t)(uint16_t)(int16_t)rbp_off << 16 | (uint64_t)(uint32_t)cfa_off << 32;
}
static int rule_kind(rule_t r)
{
    return (int)(r & 3);
}
static int rule_cfa_rbp(rule_t r)
{
    return (int)(r >> 2 & 1);
}
static int rule_rbp_saved(rule_t r)
{
    return (int)(r >> 3 & 1);
}
static int32_t rule_rbp_off(rule_t r)
{
    return (int16_t)(uint16_t)(r >> 16);
}
static int32_t rule_cfa_off(rule_t r)
{
    return (int32_t)(uint32_t)(r >> 32);
}

/* ---- reading DWARF-encoded values ---- */
struct reader {
    const uint8_t *p;
};

static uint64_t uleb(struct reader *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    return v;
}

static int64_t sleb(struct reader *r)
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

#define DW_EH_PE_omit 0xff

/* Reads an n-byte little-endian value (n = 2, 4 or 8), sign-extended when
 * is_signed. */
static uint64_t fixed(struct reader *r, unsigned n, int is_signed)
{
    uint64_t v = 0;
    memcpy(&v, r->p, n);
    r->p += n;
    if (is_signed && n < 8 && (v >> (8 * n - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * n);
    return v;
}

/* Reads a pointer with encoding enc (DW_EH_PE_*). Sets *ok = 0 for
 * encodings we do not handle. */
static uint64_t read_encoded(struct reader *r, uint8_t enc, uint64_t dbase, int *ok)
{
    const uint8_t *field = r->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00: /* absptr */
    case 0x04: /* udata8 */
    case 0x0c: /* sdata8 */
        v = fixed(r, 8, 0);
        break;
    case 0x01:
        v = uleb(r);
        break;
    case 0x02:
    case 0x0a:
        v = fixed(r, 2, enc & 0x08);
        break;
    case 0x03:
    case 0x0b:
        v = fixed(r, 4, enc & 0x08);
        break;
    case 0x09:
        v = (uint64_t)sleb(r);
        break;
    default:
        *ok = 0;
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10: /* pcrel */
        v += (uint64_t)(uintptr_t)field;
        break;
    case 0x30: /* datarel */
        v += dbase;
        break;
    default:
        *ok = 0;
        return 0;
    }
    if (enc & 0x80)
        *ok = 0; /* indirect: never used for FDE addresses in practice */
    return v;
}

/* ---- executing call frame instructions ---- */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define STATE_STACK 8

struct cfa_state {
    int cfa_reg;
    int64_t cfa_off;
    int rbp_saved;
    int64_t rbp_off;
    int ra_saved;
    int64_t ra_off;
    int ra_undefined;
    int bad; /* something we cannot express */
};

struct cie_info {
    int has_z; /* augmentation data (and its length) follow in FDEs */
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    int signal_frame;
    const uint8_t *insns, *insns_end;
};

static void set_reg_offset(struct cfa_state *s, uint64_t reg, int64_t off)
{
    if (reg == REG_RBP) {
        s->rbp_saved = 1;
        s->rbp_off = off;
    } else if (reg == REG_RA) {
        s->ra_saved = 1;
        s->ra_off = off;
    }
}

static void set_reg_other(struct cfa_state *s, uint64_t reg, int expressible)
{
    if (reg == REG_RBP || reg == REG_RA) {
        if (!expressible)
            s->bad = 1;
        else if (reg == REG_RBP)
            s->rbp_saved = 0;
        else
            s->ra_undefined = 1;
    }
}

enum {
    CFA_nop = 0x00,
    CFA_set_loc = 0x01,
    CFA_advance_loc1 = 0x02,
    CFA_advance_loc2 = 0x03,
    CFA_advance_loc4 = 0x04,
    CFA_offset_extended = 0x05,
    CFA_restore_extended = 0x06,
    CFA_undefined = 0x07,
    CFA_same_value = 0x08,
    CFA_register = 0x09,
    CFA_remember_state = 0x0a,
    CFA_restore_state = 0x0b,
    CFA_def_cfa = 0x0c,
    CFA_def_cfa_register = 0x0d,
    CFA_def_cfa_offset = 0x0e,
    CFA_def_cfa_expression = 0x0f,
    CFA_expression = 0x10,
    CFA_offset_extended_sf = 0x11,
    CFA_def_cfa_sf = 0x12,
    CFA_def_cfa_offset_sf = 0x13,
    CFA_val_offset = 0x14,
    CFA_val_offset_sf = 0x15,
    CFA_val_expression = 0x16,
    CFA_GNU_args_size = 0x2e,
    CFA_GNU_negative_offset_extended = 0x2f,
};

struct cfa_run {
    struct cfa_state *s;
    const struct cfa_state *initial;
    const struct cie_info *cie;
    struct cfa_state stack[STATE_STACK];
    int depth;
};

static void restore_reg(struct cfa_run *x, uint64_t reg)
{
    if (reg == REG_RBP) {
        x->s->rbp_saved = x->initial->rbp_saved;
        x->s->rbp_off = x->initial->rbp_off;
    }
}

/* The location advance of an advance_loc instruction, or -1 for others. */
static int64_t advance_of(uint8_t op, struct reader *r, const struct cie_info *cie)
{
    if ((op & 0xc0) == 0x40)
        return (int64_t)((op & 0x3f) * cie->code_align);
    switch (op) {
    case CFA_advance_loc1:
        return (int64_t)(*r->p++ * cie->code_align);
    case CFA_advance_loc2:
        return (int64_t)(fixed(r, 2, 0) * cie->code_align);
    case CFA_advance_loc4:
        return (int64_t)(fixed(r, 4, 0) * cie->code_align);
    default:
        return -1;
    }
}

/* Applies one instruction that changes the rules (not the location). */
static void apply(struct cfa_run *x, uint8_t op, struct reader *r)
{
    struct cfa_state *s = x->s;
    int64_t da = x->cie->data_align;
    uint64_t reg, n;
    if ((op & 0xc0) == 0x80) {
        set_reg_offset(s, op & 0x3f, (int64_t)uleb(r) * da);
        return;
    }
    if ((op & 0xc0) == 0xc0) {
        restore_reg(x, op & 0x3f);
        return;
    }
    switch (op) {
    case CFA_nop:
    case CFA_GNU_args_size:
        if (op == CFA_GNU_args_size)
            uleb(r);
        return;
    case CFA_offset_extended:
        reg = uleb(r);
        set_reg_offset(s, reg, (int64_t)uleb(r) * da);
        return;
    case CFA_offset_extended_sf:
        reg = uleb(r);
        set_reg_offset(s, reg, sleb(r) * da);
        return;
    case CFA_GNU_negative_offset_extended:
        reg = uleb(r);
        set_reg_offset(s, reg, -(int64_t)uleb(r) * da);
        return;
    case CFA_restore_extended:
        restore_reg(x, uleb(r));
        return;
    case CFA_undefined:
        set_reg_other(s, uleb(r), 1);
        return;
    case CFA_same_value:
        reg = uleb(r);
        if (reg == REG_RBP)
            s->rbp_saved = 0;
        else if (reg == REG_RA)
            s->bad = 1;
        return;
    case CFA_register:
    case CFA_val_offset:
    case CFA_val_offset_sf:
        reg = uleb(r);
        uleb(r);
        set_reg_other(s, reg, 0);
        return;
    case CFA_expression:
    case CFA_val_expression:
        reg = uleb(r);
        n = uleb(r);
        r->p += n;
        set_reg_other(s, reg, 0);
        return;
    case CFA_remember_state:
        if (x->depth == STATE_STACK)
            s->bad = 1;
        else
            x->stack[x->depth++] = *s;
        return;
    case CFA_restore_state:
        if (x->depth == 0)
            s->bad = 1;
        else
            *s = x->stack[--x->depth]; /* the CFA rule too, as GCC's unwinder does */
        return;
    case CFA_def_cfa:
        s->cfa_reg = (int)uleb(r);
        s->cfa_off = (int64_t)uleb(r);
        return;
    case CFA_def_cfa_sf:
        s->cfa_reg = (int)uleb(r);
        s->cfa_off = sleb(r) * da;
        return;
    case CFA_def_cfa_register:
        s->cfa_reg = (int)uleb(r);
        return;
    case CFA_def_cfa_offset:
        s->cfa_off = (int64_t)uleb(r);
        return;
    case CFA_def_cfa_offset_sf:
        s->cfa_off = sleb(r) * da;
        return;
    default: /* set_loc, def_cfa_expression, vendor extensions */
        s->bad = 1;
        return;
    }
}

/* Runs instructions [p, end) from location loc until the location passes
 * target, leaving in *s the rules for target. */
static void run_cfa(struct cfa_state *s, const struct cfa_state *initial,
                    const struct cie_info *cie, const uint8_t *p, const uint8_t *end, uint64_t loc,
                    uint64_t target)
{
    struct cfa_run x = {.s = s, .initial = initial, .cie = cie, .depth = 0};
    struct reader r = {p};
    while (r.p < end && !s->bad) {
        uint8_t op = *r.p++;
        int64_t adv = advance_of(op, &r, cie);
        if (adv < 0) {
            apply(&x, op, &r);
            continue;
        }
        if (loc + (uint64_t)adv > target)
            return;
        loc += (uint64_t)adv;
    }
}

static int parse_cie(const uint8_t *cie, struct cie_info *out)
{
    struct reader r = {cie};
    uint32_t len;
    memcpy(&len, r.p, 4);
    r.p += 4;
    if (len == 0 || len == 0xffffffffu)
        return -1;
    const uint8_t *end = r.p + len;
    r.p += 4; /* CIE id */
    uint8_t version = *r.p++;
    const char *aug = (const char *)r.p;
    r.p += strlen(aug) + 1;
    if (aug[0] == 'e' && aug[1] == 'h')
        return -1;
    out->code_align = uleb(&r);
    out->data_align = sleb(&r);
    uint64_t ra = version == 1 ? *r.p++ : uleb(&r);
    if (ra != REG_RA)
        return -1;
    out->fde_enc = 0;
    out->signal_frame = 0;
    out->has_z = aug[0] == 'z';
    if (aug[0] == 'z') {
        uint64_t n = uleb(&r);
        const uint8_t *data_end = r.p + n;
        for (const char *a = aug + 1; *a; a++) {
            int ok = 1;
            if (*a == 'R')
                out->fde_enc = *r.p++;
            else if (*a == 'L')
                r.p++;
            else if (*a == 'P') {
                uint8_t enc = *r.p++;
                read_encoded(&r, enc & 0x7f, 0, &ok);
            } else if (*a == 'S')
                out->signal_frame = 1;
            else
                return -1;
        }
        r.p = data_end;
    }
    out->insns = r.p;
    out->insns_end = end;
    return 0;
}

/* Finds the FDE covering pc in an .eh_frame_hdr binary-search table. */
static const uint8_t *find_fde(const uint8_t *hdr, uint64_t pc)
{
    if (hdr[0] != 1 || hdr[3] != 0x3b) /* version 1, datarel|sdata4 table */
        return NULL;
    struct reader r = {hdr + 4};
    int ok = 1;
    read_encoded(&r, hdr[1], 0, &ok); /* eh_frame_ptr */
    uint64_t count = read_encoded(&r, hdr[2], 0, &ok);
    if (!ok || count == 0)
        return NULL;
    const int32_t *table = (const int32_t *)r.p;
    uint64_t base = (uint64_t)(uintptr_t)hdr;
    size_t lo = 0, hi = count;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (base + (uint64_t)(int64_t)table[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if (base + (uint64_t)(int64_t)table[2 * lo] > pc)
        return NULL;
    return (const uint8_t *)(uintptr_t)(base + (uint64_t)(int64_t)table[2 * lo + 1]);
}

static rule_t state_to_rule(const struct cfa_state *s)
{
    if (s->bad || (s->cfa_reg != REG_RSP && s->cfa_reg != REG_RBP))
        return rule_make(RULE_UNSUPPORTED, 0, 0, 0, 0);
    if (s->ra_undefined)
        return rule_make(RULE_END, 0, 0, 0, 0);
    if (!s->ra_saved || s->ra_off != -8 || s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX ||
        (s->rbp_saved && (s->rbp_off < INT16_MIN || s->rbp_off > INT16_MAX)))
        return rule_make(RULE_UNSUPPORTED, 0, 0, 0, 0);
    return rule_make(RULE_OK, s->cfa_reg == REG_RBP, s->rbp_saved, (int32_t)s->rbp_off,
                     (int32_t)s->cfa_off);
}

/* Works out the rule for the call site just before return address ra,
 * in any code, the agent's included. */
static rule_t rule_at(uint64_t ra)
{
    uint64_t pc = ra - 1;
    struct dl_find_object dlfo;
    if (_dl_find_object((void *)(uintptr_t)pc, &dlfo) != 0 || !dlfo.dlfo_eh_frame)
        return rule_make(RULE_END, 0, 0, 0, 0); /* no object or no CFI: stop here */
    const uint8_t *fde = find_fde(dlfo.dlfo_eh_frame, pc);
    if (!fde)
        return rule_make(RULE_END, 0, 0, 0, 0);
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (len == 0 || len == 0xffffffffu || cie_off == 0)
        return rule_make(RULE_UNSUPPORTED, 0, 0, 0, 0);
    struct cie_info cie;
    if (parse_cie(fde + 4 - cie_off, &cie) < 0 || cie.signal_frame)
        return rule_make(RULE_UNSUPPORTED, 0, 0, 0, 0);
    struct reader r = {fde + 8};
    int ok = 1;
    uint64_t start = read_encoded(&r, cie.fde_enc, 0, &ok);
    uint64_t range = read_encoded(&r, cie.fde_enc & 0x0f, 0, &ok);
    if (!ok || pc < start || pc >= start + range)
        return rule_make(RULE_UNSUPPORTED, 0, 0, 0, 0);
    if (cie.has_z)
        r.p += uleb(&r); /* augmentation data: only with a 'z' CIE */
    struct cfa_state init = {0}, s;
    run_cfa(&init, &init, &cie, cie.insns, cie.insns_end, 0, UINT64_MAX);
    s = init;
    run_cfa(&s, &init, &cie, r.p, fde + 4 + len, start, pc);
    return state_to_rule(&s);
}

/* rule_at for the program's stacks: our own code mid-stack (a dlopen'd
 * constructor that allocates, under our dlopen) is for the general path,
 * which filters those frames. Cached as a rule, the walk pays no test per
 * frame for it. */
static rule_t compute_rule(uint64_t ra)
{
    if (mvz_modules_is_agent(ra))
        return rule_make(RULE_UNSUPPORTED, 0, 0, 0, 0);
    return rule_at(ra);
}

/* Largest distance between two consecutive frames we believe. */
#define MAX_FRAME_SIZE (64u << 20)

/* Unwinds a stack frozen in memory (a stopped thread's, in the snapshot's
 * copy) from the state (pc, sp, bp) with the CFI rules, no caches: each
 * frame's pc and CFA (the top of its frame), innermost first. With
 * pc_is_ra 0, pc is where the thread stopped, not a return address. Reads
 * only words inside [lo, hi), the stack's mapping. Returns the count. */
int mvz_unwind_regs(uintptr_t pc, uintptr_t sp, uintptr_t bp, int pc_is_ra, uintptr_t lo,
                    uintptr_t hi, uintptr_t *pcs, uintptr_t *cfas, int max)
{
    int n = 0;
    for (; n < max && pc; n++) {
        rule_t rule = rule_at(n == 0 && !pc_is_ra ? pc + 1 : pc);
        if (rule_kind(rule) != RULE_OK)
            break;
        uintptr_t cfa = (rule_cfa_rbp(rule) ? bp : sp) + (intptr_t)rule_cfa_off(rule);
        if (cfa - sp - 1 >= MAX_FRAME_SIZE || (cfa & 7) || cfa < lo + 8 || cfa > hi)
            break;
        if (rule_rbp_saved(rule)) {
            uintptr_t at = cfa + (intptr_t)rule_rbp_off(rule);
            if (at < lo || at + 8 > hi)
                break;
            bp = *(const uintptr_t *)at;
        }
        pcs[n] = pc;
        cfas[n] = cfa;
        pc = *(const uintptr_t *)(cfa - 8);
        sp = cfa;
    }
    return n;
}

/* ---- per-thread rule cache ---- */
/* 256 KiB a thread: large programs (cc1plus) have tens of thousands of
 * distinct return addresses on their allocation paths. */
#define RULE_SLOTS 16384u

struct rule_slot {
    uint64_t ra;
    rule_t rule;
};

static __thread struct rule_slot *rule_cache __attribute__((tls_model("initial-exec")));
static __thread uint32_t rule_cache_epoch __attribute__((tls_model("initial-exec")));

/* The calling thread's rule cache, emptied when the module map changed
 * (an address may now belong to other code). NULL when out of memory. */
static struct rule_slot *thread_rule_cache(void)
{
    uint32_t ep = mvz_stacks_epoch();
    if (MVZ_LIKELY(rule_cache && rule_cache_epoch == ep))
        return rule_cache;
    if (!rule_cache)
        rule_cache = mvz_map_zeroed(RULE_SLOTS * sizeof(struct rule_slot));
    else
        memset(rule_cache, 0, RULE_SLOTS * sizeof(struct rule_slot));
    rule_cache_epoch = ep;
    return rule_cache;
}

/* Two ways, whose slots share a cache line, the latest used first:
 * cc1plus's 15,000 return addresses met in one way 87,000 times, mostly
 * by conflict (a rule costs an FDE search and a CFA program); in two
 * ways 15,000 times. */
static inline struct rule_slot *rule_pair(struct rule_slot *cache, uint64_t ra)
{
    return &cache[(ra ^ (ra >> 12)) & (RULE_SLOTS - 2)];
}

static inline rule_t lookup_rule(struct rule_slot *pair, uint64_t ra)
{
    if (MVZ_LIKELY(pair[0].ra == ra && pair[0].rule))
        return pair[0].rule;
    struct rule_slot older = pair[0];
    if (pair[1].ra == ra && pair[1].rule) {
        pair[0] = pair[1];
        pair[1] = older;
        return pair[0].rule;
    }
    rule_t rule = compute_rule(ra);
    pair[1] = older;
    pair[0].ra = ra;
    pair[0].rule = rule;
    return rule;
}

/* ---- the previous walk, to skip re-walking the frames it shares ----
 *
 * Consecutive allocations of a thread usually share most of their stack:
 * only the innermost frames differ. Each thread keeps its previous walk,
 * outermost frame first so that the shared part stays in place. Unwinding
 * is a function of the state (pc, sp, bp) and of the memory words the rules
 * read. So when the new walk reaches a state the previous one also passed
 * through, the rest of the walk is the same as before provided those words
 * still hold the same values - which costs one independent load and compare
 * per word instead of a rule lookup and a dependent chain of loads. */
struct walk_frame {
    uintptr_t sp, bp; /* with pcs[i], the state when this frame was unwound */
    uint64_t hash;    /* mvz_hash_step over the pcs of this frame and all outer ones */
    rule_t rule;      /* the rule it was unwound with */
};

/* A word a frame's unwinding read, and what it held. */
struct word_check {
    const uintptr_t *addr;
    uintptr_t val;
};

/* A frame of the walk being made, innermost first: one cache line. */
struct fresh_frame {
    uintptr_t pc, sp, bp;
    rule_t rule;
    struct word_check ra;      /* where its caller's pc was read (no_word at the end) */
    struct word_check bp_word; /* where its caller's bp was read, if the rule saves bp */
};

/* The word the end of the stack "read": it never changes, so the last
 * frame's check needs no test for a missing word. */
static const uintptr_t no_word = 0;

/* The arrays are used from their first entries (fs from the top of the
 * walk). Each starts at its own offset within a page: at the same offset,
 * their hot lines would share the same few L1 sets, eight ways among
 * them and the program's data (under cachegrind's model of CPython's run,
 * that tripled the unwinder's misses). */
#define WALK_GAP(name, offset) _Alignas(4096) char name[offset]

struct walk {
    uint32_t epoch;
    int n;        /* f[0] outermost .. f[n-1] innermost */
    int complete; /* it reached the end of the stack, not the depth cap */
    struct walk_frame fs[MVZ_MAX_DEPTH + 1]; /* fs[0]: a sentinel whose sp no state has */
    WALK_GAP(gap_pcs, 2048);
    uintptr_t pcs[MVZ_MAX_DEPTH]; /* f[i]'s pc, contiguous: the stack itself */
    WALK_GAP(gap_words_of, 2560);
    /* The words of f[0..i] are words[0..words_of[i] >> 1). Only the words
     * the walk's pcs depend on: a saved bp that no frame further out
     * computes its CFA from is left out (in code without frame pointers,
     * nearly all), which halves the checks. Bit 0: f[i].bp matters to the
     * walk from f[i] outwards. */
    uint32_t words_of[MVZ_MAX_DEPTH];
    WALK_GAP(gap_words, 2816);
    struct word_check words[2 * MVZ_MAX_DEPTH];
    WALK_GAP(gap_fresh, 3328);
    struct fresh_frame fresh[MVZ_MAX_DEPTH]; /* scratch: kept off the program's stack */
};

/* The walk's frames, f[0] outermost; f[-1] is the sentinel. */
static inline struct walk_frame *walk_frames(struct walk *w)
{
    return w->fs + 1;
}

static __thread struct walk *last_walk __attribute__((tls_model("initial-exec")));

/* ---- walks remembered by the state they start from ----
 *
 * A program allocates from a few places over and over, each time with
 * the same frames below (sqlite3 parsing and then running statement after
 * statement), and the previous walk shares only the outer frames with the
 * next when the two places alternate: sqlite3 walked 5.3 fresh frames an
 * allocation. The same argument as the previous walk's goes for any walk:
 * from the same state, with the same words read holding the same values,
 * a walk gives the same frames, so the same stack. So each thread keeps,
 * by its starting state, the words of recent walks and the value the
 * caller got for their stack (its id), and a walk that starts from a
 * remembered state and finds its words unchanged is not made at all. */
#define SITE_SETS 128u
#define SITE_WAYS 4u
#define SITE_SLOTS (SITE_SETS * SITE_WAYS)
#define SITE_WORDS 48 /* deeper walks are not remembered */

/* A set's ways may hold walks from the same state: the allocator's own
 * wrapper (sqlite3MemMalloc) is where every walk starts, at the depths
 * its callers leave it at. */
struct site {
    uintptr_t pc, sp, bp; /* pc 0: empty; bp only if bp_matters */
    int bp_matters;
    uint32_t epoch; /* the rules' (mvz_stacks_epoch) */
    uint32_t value;
    int nw;
    uint32_t victim; /* way 0 only: the set's next way to replace */
    struct word_check words[SITE_WORDS];
};

static __thread struct site *sites __attribute__((tls_model("initial-exec")));

static struct walk *thread_walk(void)
{
    if (MVZ_UNLIKELY(!last_walk)) {
        struct walk *w = mvz_map_zeroed(sizeof(struct walk));
        if (w)
            w->fs[0].sp = UINTPTR_MAX;
        last_walk = w;
    }
    return last_walk;
}

/* At thread exit: the caches are per thread and would otherwise outlive it
 * (programs that start a thread per request would grow without bound). */
void mvz_unwind_thread_exit(void)
{
    if (rule_cache)
        mvz_unmap(rule_cache, RULE_SLOTS * sizeof(struct rule_slot));
    if (last_walk)
        mvz_unmap(last_walk, sizeof(struct walk));
    if (sites)
        mvz_unmap(sites, SITE_SLOTS * sizeof(struct site));
    rule_cache = NULL;
    last_walk = NULL;
    sites = NULL;
}

static inline uintptr_t word_diff(const struct word_check *c)
{
    return *c->addr ^ c->val;
}

static inline int word_end(const struct walk *w, int i)
{
    return (int)(w->words_of[i] >> 1);
}

/* Whether the walk from f[i] outwards reads f[i]'s bp. When it does not
 * (code without frame pointers, where rbp is just another register), the
 * state (pc, sp) and the words decide the walk whatever rbp holds, and a
 * state that differs from f[i]'s in bp alone still meets it. */
static inline int bp_matters(const struct walk *w, int i)
{
    return (int)(w->words_of[i] & 1);
}

/* The frame whose words include words[x]: the first i with word_end > x. */
static int frame_of_word(const struct walk *w, int x, int j)
{
    int lo = 0, hi = j; /* word_end(w, j) > x */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (word_end(w, mid) > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Do the words read when walking outwards from f[j] still hold what they
 * held? Then the walk from f[j] outwards is the same as before. Returns -1
 * if so, else the innermost frame (at most j) whose words changed: only a
 * frame further out than that one can still be met. (A state can recur in
 * another activation: the same function at the same depth, called from
 * elsewhere. Giving up there used to re-walk whole stacks: 18% of sqlite3's
 * and 23% of cc1plus's.) */
static int changed_frame(const struct walk *w, int j)
{
    int x = word_end(w, j);
    /* Four words a branch; a block with a change is then searched from its
     * innermost word by the loop below, which returns within it. */
    for (; x >= 4; x -= 4) {
        const struct word_check *c = &w->words[x - 4];
        if (word_diff(&c[0]) | word_diff(&c[1]) | word_diff(&c[2]) | word_diff(&c[3]))
            break;
    }
    for (; x > 0; x--)
        if (word_diff(&w->words[x - 1]))
            return frame_of_word(w, x - 1, j);
    return -1;
}

/* Puts the fresh frames on top of the shared part f[0..base), outermost
 * first, with their hashes and the words their pcs depend on. */
static void keep_fresh(struct walk *w, int base, int t)
{
    struct walk_frame *wf = walk_frames(w);
    uint64_t h = base ? wf[base - 1].hash : MVZ_HASH_SEED;
    uint32_t used = base ? w->words_of[base - 1] & 1 : 0; /* bp of the frame just outside */
    uint32_t nw = base ? w->words_of[base - 1] >> 1 : 0;
    for (int i = 0; i < t; i++) {
        const struct fresh_frame *fr = &w->fresh[t - 1 - i];
        rule_t r = fr->rule;
        int k = base + i;
        wf[k] = (struct walk_frame){fr->sp, fr->bp, h = mvz_hash_step(h, fr->pc), r};
        w->pcs[k] = fr->pc;
        w->words[nw++] = fr->ra;
        /* The bp this frame read became the bp of the frame outside it. */
        if (rule_rbp_saved(r) & used)
            w->words[nw++] = fr->bp_word;
        /* An END rule has neither bit: nothing further out reads bp. */
        used = (uint32_t)(rule_cfa_rbp(r) | ((rule_rbp_saved(r) ^ 1) & (int)used));
        w->words_of[k] = nw << 1 | used;
    }
    w->n = base + t;
}

void mvz_unwind_forget(void)
{
    if (last_walk) {
        last_walk->n = 0;
        last_walk->complete = 0;
    }
}

/* The state the program was in when it called into the agent: our own
 * frames walked by frame pointer (the agent is built with them) up to the
 * first return address outside the agent. 0 when the chain looks wrong. */
static inline __attribute__((always_inline)) int
program_state(const void *hook_frame, uintptr_t *pc_out, uintptr_t *sp_out, uintptr_t *bp_out)
{
    uintptr_t *fp = hook_frame ? (uintptr_t *)(uintptr_t)hook_frame : __builtin_frame_address(0);
    uintptr_t pc = fp[1];
    int guard = 0;
    while (mvz_modules_is_agent(pc)) {
        uintptr_t *next = (uintptr_t *)fp[0];
        if (next <= fp || ++guard > 32)
            return 0;
        fp = next;
        pc = fp[1];
    }
    *pc_out = pc;
    *sp_out = (uintptr_t)(fp + 2); /* the caller's RSP after the call */
    *bp_out = fp[0];               /* the caller's RBP, saved by our prologue */
    return 1;
}

const uintptr_t *mvz_unwind_fast(const void *hook_frame, int max, int *count, uint64_t *hash,
                                 int *shared, int *same)
{
    struct rule_slot *cache = thread_rule_cache();
    struct walk *w = thread_walk();
    uintptr_t pc, sp, bp;
    if (!cache || !w || !program_state(hook_frame, &pc, &sp, &bp))
        return NULL;

    /* New frames, innermost first, until we meet the previous walk. */
    struct fresh_frame *fresh = w->fresh, *f = fresh, *end = fresh + max;
    int match = -1, complete = 0;
    int usable = w->complete && w->n > 0 && w->epoch == rule_cache_epoch;
    /* The previous walk's frame as far from the top as the next fresh one,
     * while the previous walk's rules are still good (see below). */
    int same_pos = (w->epoch == rule_cache_epoch ? w->n : 0) - 1;
    int j = usable ? w->n - 1 : -1;
    /* f[j].sp: a state below it cannot be in the previous walk. */
    struct walk_frame *wf = walk_frames(w);
    uintptr_t next_sp = wf[j].sp;
    for (;;) {
        /* The rule's slot is fetched while the previous walk is searched. */
        struct rule_slot *pair = rule_pair(cache, pc);
        __builtin_prefetch(pair);
        if (sp >= next_sp) {
            /* The previous walk's sp grows outwards, as this one's does: j
             * moves out to its first frame not below sp, and stays there
             * (the sentinel f[-1] stops it). */
            while (sp > next_sp)
                next_sp = wf[--j].sp;
            if (sp == next_sp && w->pcs[j] == pc && (wf[j].bp == bp || !bp_matters(w, j))) {
                int changed = j + 1 + (f - fresh) <= max ? changed_frame(w, j) : j;
                if (changed < 0) {
                    match = j;
                    break;
                }
                j = changed - 1; /* search only further out */
                next_sp = wf[j].sp;
            }
        }
        if (f == end || !pc)
            break;
        f->pc = pc;
        f->sp = sp;
        f->bp = bp;
        /* The frame as far from the top in the previous walk often ran the
         * same code (the wrappers every allocation passes through): its
         * rule is on a line the walk keeps warm, where the rule cache's
         * slot misses (a third of the unwinder's time on cc1plus). 44% of
         * sqlite3's fresh frames, 25% of cc1plus's, 2% of CPython's. */
        rule_t rule =
            same_pos >= 0 && w->pcs[same_pos] == pc ? wf[same_pos].rule : lookup_rule(pair, pc);
        same_pos--;
        f->rule = rule;
        int kind = rule_kind(rule);
        if (kind == RULE_END) {
            f++->ra = (struct word_check){&no_word, 0};
            complete = 1;
            break;
        }
        if (kind != RULE_OK)
            return NULL;
        uintptr_t cfa = (rule_cfa_rbp(rule) ? bp : sp) + (intptr_t)rule_cfa_off(rule);
        /* Above sp (a wrap makes cfa - sp - 1 huge), within reach, aligned. */
        if (cfa - sp - 1 >= MAX_FRAME_SIZE || (cfa & 7))
            return NULL;
        if (rule_rbp_saved(rule)) {
            f->bp_word.addr = (const uintptr_t *)(cfa + (intptr_t)rule_rbp_off(rule));
            bp = f->bp_word.val = *f->bp_word.addr;
        }
        f->ra.addr = (const uintptr_t *)(cfa - 8);
        pc = f->ra.val = *f->ra.addr;
        f++;
        sp = cfa;
        if (!pc) {
            complete = 1;
            break;
        }
    }
    int t = (int)(f - fresh);

    /* Met the previous walk at its innermost frame: the very same stack. */
    *same = match >= 0 && t == 0 && match == w->n - 1;
    int base = match >= 0 ? match + 1 : 0;
    keep_fresh(w, base, t);
    w->epoch = rule_cache_epoch;
    if (match < 0)
        w->complete = complete;
    int n = w->n;
    *count = n;
    *shared = base;
    *hash = mvz_hash_finish(n ? wf[n - 1].hash : MVZ_HASH_SEED, (uint32_t)n);
    return w->pcs;
}

static inline struct site *site_set(struct site *v, uintptr_t pc, uintptr_t sp)
{
    return &v[(((pc ^ sp) * 0x9E3779B97F4A7C15ull) >> 57) * SITE_WAYS];
}
_Static_assert(SITE_SETS == 128, "site_set takes the hash's top 7 bits");

/* Whether a remembered walk's words hold what they held, innermost first:
 * walks from the same state part there. */
static inline int site_words_same(const struct site *s)
{
    int i = s->nw;
    for (; i >= 4; i -= 4) {
        const struct word_check *c = &s->words[i - 4];
        if (word_diff(&c[3]) | word_diff(&c[2]) | word_diff(&c[1]) | word_diff(&c[0]))
            return 0;
    }
    for (; i > 0; i--)
        if (word_diff(&s->words[i - 1]))
            return 0;
    return 1;
}

int mvz_unwind_site_find(const void *hook_frame, uint32_t epoch, uint32_t *value)
{
    uintptr_t pc, sp, bp;
    if (!sites || !program_state(hook_frame, &pc, &sp, &bp))
        return 0;
    const struct site *set = site_set(sites, pc, sp);
    for (unsigned k = 0; k < SITE_WAYS; k++) {
        const struct site *s = &set[k];
        if (s->pc == pc && s->sp == sp && (s->bp == bp || !s->bp_matters) && s->epoch == epoch &&
            site_words_same(s)) {
            *value = s->value;
            return 1;
        }
    }
    return 0;
}

void mvz_unwind_site_keep(uint32_t epoch, uint32_t value)
{
    struct walk *w = last_walk;
    if (!w || w->n <= 0 || w->epoch != epoch)
        return;
    int n = w->n, nw = word_end(w, n - 1);
    if (nw > SITE_WORDS)
        return;
    if (!sites && !(sites = mvz_map_zeroed(SITE_SLOTS * sizeof(struct site))))
        return;
    const struct walk_frame *wf = walk_frames(w);
    struct site *set = site_set(sites, w->pcs[n - 1], wf[n - 1].sp);
    struct site *s = &set[set[0].victim++ % SITE_WAYS];
    s->pc = w->pcs[n - 1];
    s->sp = wf[n - 1].sp;
    s->bp = wf[n - 1].bp;
    s->bp_matters = bp_matters(w, n - 1);
    s->epoch = epoch;
    s->value = value;
    s->nw = nw;
    memcpy(s->words, w->words, (size_t)nw * sizeof(*s->words));
}

#else

int mvz_unwind_site_find(const void *hook_frame, uint32_t epoch, uint32_t *value)
{
    (void)hook_frame;
    (void)epoch;
    (void)value;
    return 0;
}

void mvz_unwind_site_keep(uint32_t epoch, uint32_t value)
{
    (void)epoch;
    (void)value;
}

void mvz_unwind_thread_exit(void) {}

void mvz_unwind_forget(void) {}

int mvz_unwind_regs(uintptr_t pc, uintptr_t sp, uintptr_t bp, int pc_is_ra, uintptr_t lo,
                    uintptr_t hi, uintptr_t *pcs, uintptr_t *cfas, int max)
{
    (void)pc, (void)sp, (void)bp, (void)pc_is_ra, (void)lo, (void)hi, (void)pcs, (void)cfas;
    (void)max;
    return 0;
}

const uintptr_t *mvz_unwind_fast(const void *hook_frame, int max, int *count, uint64_t *hash,
                                 int *shared, int *same)
{
    (void)hook_frame;
    (void)max;
    (void)count;
    (void)hash;
    (void)shared;
    (void)same;
    return NULL;
}

#endif
