/*
 * pprof.c - `memviz export --format pprof`: the profile as a gzipped
 * profile.proto (github.com/google/pprof/proto/profile.proto), the format of
 * `go tool pprof` and the tools built on it.
 *
 * Every site (distinct stack) is one Sample with four values: alloc_objects
 * and alloc_space (allocation calls and bytes of the window), inuse_objects
 * and inuse_space (blocks and bytes live at the peak). Locations are the
 * return addresses of the stacks, each with its inlined functions as extra
 * Lines; Mappings are the trace's modules. The message is small enough to be
 * built in memory with the few protobuf encoders below, then compressed once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cmd/cmd.h"
#include "export/export.h"
#include "util/strtab.h"

/* Deep enough for the 1024-frame depth cap plus inlined frames. */
#define FRAMES_MAX 4096

/* ---- protobuf wire format: varints and length-delimited fields ---- */

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

struct pb {
    uint8_t *p;
    size_t n, cap;
    int failed; /* out of memory: the message is incomplete */
};

static void pb_raw(struct pb *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->n + n > cap)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_raw(b, tmp, n);
}

static void pb_tag(struct pb *b, unsigned field, unsigned wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

/* Zero is every scalar's default value and is left out, as encoders do. */
static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
    if (!v)
        return;
    pb_tag(b, field, WIRE_VARINT);
    pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *data, size_t n)
{
    pb_tag(b, field, WIRE_LEN);
    pb_varint(b, n);
    pb_raw(b, data, n);
}

/* Appends the finished submessage m as field `field` of b and empties m. */
static void pb_msg(struct pb *b, unsigned field, struct pb *m)
{
    if (m->failed)
        b->failed = 1;
    pb_bytes(b, field, m->p, m->n);
    m->n = 0;
    m->failed = 0;
}

/* A packed repeated varint field; scratch holds the encoded values. */
static void pb_packed(struct pb *b, unsigned field, const uint64_t *v, size_t n, struct pb *scratch)
{
    for (size_t i = 0; i < n; i++)
        pb_varint(scratch, v[i]);
    pb_msg(b, field, scratch);
}

/* ---- profile.proto field numbers ---- */

enum {
    PROFILE_SAMPLE_TYPE = 1,
    PROFILE_SAMPLE = 2,
    PROFILE_MAPPING = 3,
    PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6,
    PROFILE_TIME_NANOS = 9,
    PROFILE_DURATION_NANOS = 10,
    PROFILE_PERIOD_TYPE = 11,
    PROFILE_PERIOD = 12,
    PROFILE_COMMENT = 13,
    PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2 };
enum {
    MAPPING_ID = 1,
    MAPPING_MEMORY_START = 2,
    MAPPING_MEMORY_LIMIT = 3,
    MAPPING_FILENAME = 5,
    MAPPING_BUILD_ID = 6,
    MAPPING_HAS_FUNCTIONS = 7,
    MAPPING_HAS_FILENAMES = 8,
    MAPPING_HAS_LINE_NUMBERS = 9,
    MAPPING_HAS_INLINE_FRAMES = 10,
};
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_FILENAME = 4 };

/* ---- the writer ---- */

/* A growable map from a key table's ids to location ids. */
struct idmap {
    uint32_t *v;
    size_t cap;
};

struct pprof {
    const struct mvz_export *x;
    const struct mvz_trace *t;
    struct mvz_strtab strs;  /* the string table; id 0 is "" */
    struct mvz_strtab funcs; /* "name id/file id" -> function id */
    struct mvz_strtab locs;  /* "mapping id/address" -> location id */
    struct mvz_strtab addrs; /* "generation/address" -> index into addr_loc */
    struct idmap addr_loc;   /* -> location id, 0 until known */
    /* The Profile, and scratch buffers for the messages nested in it: a
     * Function is written while its Location's Line is being built. */
    struct pb out, msg, sub, fn, tmp;
    struct mvz_frame *frames;
    uint64_t *loc_ids; /* the sample being built, innermost first */
    int failed;
    size_t unkeyed; /* locations too long to key (new_location) */
};

static uint64_t str_id(struct pprof *w, const char *s)
{
    if (!s || !*s)
        return 0;
    uint32_t id = mvz_strtab_intern(&w->strs, s);
    if (!id)
        w->failed = 1;
    return id;
}

/* Interns key in t; *fresh tells whether it was not there before. */
static uint32_t key_id(struct pprof *w, struct mvz_strtab *t, const char *key, int *fresh)
{
    size_t before = t->n;
    uint32_t id = mvz_strtab_intern(t, key);
    if (!id)
        w->failed = 1;
    *fresh = t->n != before;
    return id;
}

static int idmap_set(struct idmap *m, uint32_t key, uint32_t value)
{
    if (key >= m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        while (cap <= key)
            cap *= 2;
        uint32_t *v = realloc(m->v, cap * sizeof(*v));
        if (!v)
            return -1;
        memset(v + m->cap, 0, (cap - m->cap) * sizeof(*v));
        m->v = v;
        m->cap = cap;
    }
    m->v[key] = value;
    return 0;
}

static void value_type(struct pprof *w, unsigned field, const char *type, const char *unit)
{
    pb_uint(&w->msg, VALUE_TYPE_TYPE, str_id(w, type));
    pb_uint(&w->msg, VALUE_TYPE_UNIT, str_id(w, unit));
    pb_msg(&w->out, field, &w->msg);
}

/* Function ids are deduplicated by (name, file). */
static uint64_t function_id(struct pprof *w, const struct mvz_frame *f)
{
    char buf[512];
    uint64_t name = str_id(w, mvz_export_frame_name(f, buf, sizeof(buf))),
             file = str_id(w, f->file);
    char key[48];
    int fresh;
    snprintf(key, sizeof(key), "%" PRIu64 "/%" PRIu64, name, file);
    uint32_t id = key_id(w, &w->funcs, key, &fresh);
    if (fresh && id) {
        pb_uint(&w->fn, FUNCTION_ID, id);
        pb_uint(&w->fn, FUNCTION_NAME, name);
        pb_uint(&w->fn, FUNCTION_FILENAME, file);
        pb_msg(&w->out, PROFILE_FUNCTION, &w->fn);
    }
    return id;
}

/* The module (1-based mapping id) that held addr in generation gen; 0 if none. */
static uint32_t mapping_of(const struct mvz_trace *t, uint32_t gen, uint64_t addr)
{
    for (size_t i = 0; i < t->nmodules; i++) {
        const struct mvz_module *m = &t->modules[i];
        int mapped = m->gen_loaded <= gen && (m->gen_unloaded == 0 || gen < m->gen_unloaded);
        if (mapped && m->lo <= addr && addr < m->hi)
            return (uint32_t)(i + 1);
    }
    return 0;
}

/* Writes a Location for frames f[0..n) (one return address: inlined frames
 * first, then the function they were inlined into, which is also the order
 * of profile.proto's Lines). */
static void write_location(struct pprof *w, uint32_t id, uint32_t mapping,
                           const struct mvz_frame *f, size_t n)
{
    pb_uint(&w->msg, LOCATION_ID, id);
    pb_uint(&w->msg, LOCATION_MAPPING_ID, mapping);
    /* A return address points past the call; the call instruction itself
     * is at address - 1, which is where profile.proto wants non-leaf
     * addresses (and all of ours are). */
    pb_uint(&w->msg, LOCATION_ADDRESS, f[0].address ? f[0].address - 1 : 0);
    for (size_t i = 0; i < n; i++) {
        pb_uint(&w->sub, LINE_FUNCTION_ID, function_id(w, &f[i]));
        pb_uint(&w->sub, LINE_LINE, f[i].line);
        pb_msg(&w->msg, LOCATION_LINE, &w->sub);
    }
    pb_msg(&w->out, PROFILE_LOCATION, &w->msg);
}

/* Location ids are per distinct return address and module; frames without
 * an address (pseudo-frames such as "[stack not recorded]", the frames of a
 * merged profile) by their names, files and lines. */
static uint32_t new_location(struct pprof *w, uint32_t gen, const struct mvz_frame *f, size_t n)
{
    uint32_t mapping = f[0].address ? mapping_of(w->t, gen, f[0].address) : 0;
    char key[1024];
    size_t len = 0;
    int fresh;
    if (f[0].address)
        len = (size_t)snprintf(key, sizeof(key), "m%" PRIu32 "/%" PRIx64, mapping, f[0].address);
    else
        for (size_t i = 0; i < n && len < sizeof(key); i++)
            len += (size_t)snprintf(
                key + len, sizeof(key) - len, "p%" PRIu64 "/%" PRIu64 "/%u/%" PRIu64,
                str_id(w, f[i].function), str_id(w, f[i].file), f[i].line, str_id(w, f[i].module));
    if (len >= sizeof(key)) /* too long to key: a location of its own */
        snprintf(key, sizeof(key), "u%zu", ++w->unkeyed);
    uint32_t id = key_id(w, &w->locs, key, &fresh);
    if (fresh && id)
        write_location(w, id, mapping, f, n);
    return id;
}

/* The same address in the same generation always symbolizes the same way,
 * so (generation, address) is looked up first, saving the module search. */
static uint32_t location_id(struct pprof *w, uint32_t gen, const struct mvz_frame *f, size_t n)
{
    char key[48];
    int fresh;
    if (!f[0].address)
        return new_location(w, gen, f, n);
    snprintf(key, sizeof(key), "%" PRIu32 "/%" PRIx64, gen, f[0].address);
    uint32_t k = key_id(w, &w->addrs, key, &fresh);
    if (!k)
        return 0;
    if (k < w->addr_loc.cap && w->addr_loc.v[k])
        return w->addr_loc.v[k];
    uint32_t id = new_location(w, gen, f, n);
    if (idmap_set(&w->addr_loc, k, id) < 0)
        w->failed = 1;
    return id;
}

/* One Sample: the frames' locations, innermost first, and its values:
 * four, and the eight of the leak kinds when the export has them. */
static void write_sample(struct pprof *w, uint32_t gen, size_t n, const uint64_t values[12])
{
    size_t nloc = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i; /* the group ends at the frame the others were inlined into */
        while (j + 1 < n && w->frames[j].inlined)
            j++;
        w->loc_ids[nloc++] = location_id(w, gen, &w->frames[i], j + 1 - i);
        i = j + 1;
    }
    pb_packed(&w->msg, SAMPLE_LOCATION_ID, w->loc_ids, nloc, &w->tmp);
    pb_packed(&w->msg, SAMPLE_VALUE, values, w->x->leak_by_stack ? 12 : 4, &w->tmp);
    pb_msg(&w->out, PROFILE_SAMPLE, &w->msg);
}

/* Every site with a value, trimmed as the export options say; the sites
 * under --min-percent of the chosen cost make one sample. */
static void write_samples(struct pprof *w)
{
    /* Sites are indexed by stack id; the unused ones are all zero. */
    const struct mvz_profile *p = w->x->p;
    uint64_t other[12] = {0};
    for (size_t i = 0; i < p->sites_cap && !w->failed; i++) {
        const struct mvz_site *s = &p->sites[i];
        uint64_t v[12] = {s->allocations, s->allocated_bytes, s->at_peak_blocks, s->at_peak_bytes};
        if (w->x->leak_by_stack && i < w->x->leak_nstacks)
            memcpy(v + 4, w->x->leak_by_stack[i], sizeof(w->x->leak_by_stack[i]));
        if (!(v[0] || v[1] || v[2] || v[3]))
            continue;
        if (!mvz_export_site_shown(w->x, s, w->x->cost)) {
            for (int k = 0; k < 12; k++)
                other[k] += v[k];
            continue;
        }
        const struct mvz_stack *st = mvz_trace_stack(w->t, (uint32_t)i);
        size_t n = mvz_export_stack(w->x, (uint32_t)i, w->frames, FRAMES_MAX);
        write_sample(w, st ? st->gen : 0, n, v);
    }
    if (other[0] || other[1] || other[2] || other[3]) {
        w->frames[0] = (struct mvz_frame){.function = MVZ_EXPORT_OTHER_SITES};
        write_sample(w, 0, 1, other);
    }
}

/* Build ids are written as hex, the way pprof prints and matches them. */
static void hex_build_id(const struct mvz_module *m, char *hex)
{
    size_t n = m->build_id_len < sizeof(m->build_id) ? m->build_id_len : sizeof(m->build_id);
    for (size_t k = 0; k < n; k++)
        snprintf(hex + 2 * k, 3, "%02x", m->build_id[k]);
    hex[2 * n] = '\0';
}

static void write_mappings(struct pprof *w)
{
    for (size_t i = 0; i < w->t->nmodules; i++) {
        const struct mvz_module *m = &w->t->modules[i];
        char hex[2 * sizeof(m->build_id) + 1];
        hex_build_id(m, hex);
        pb_uint(&w->msg, MAPPING_ID, i + 1);
        pb_uint(&w->msg, MAPPING_MEMORY_START, m->lo);
        pb_uint(&w->msg, MAPPING_MEMORY_LIMIT, m->hi);
        pb_uint(&w->msg, MAPPING_FILENAME, str_id(w, m->path));
        pb_uint(&w->msg, MAPPING_BUILD_ID, str_id(w, hex));
        /* Symbolized already: pprof must not redo it with other tools. */
        pb_uint(&w->msg, MAPPING_HAS_FUNCTIONS, 1);
        pb_uint(&w->msg, MAPPING_HAS_FILENAMES, 1);
        pb_uint(&w->msg, MAPPING_HAS_LINE_NUMBERS, 1);
        pb_uint(&w->msg, MAPPING_HAS_INLINE_FRAMES, 1);
        pb_msg(&w->out, PROFILE_MAPPING, &w->msg);
    }
}

/* Time, duration, units and a comment naming the trace and its window. */
static void write_header(struct pprof *w)
{
    const struct mvz_export *x = w->x;
    uint64_t end = x->to_ns < x->p->sum.duration_ns ? x->to_ns : x->p->sum.duration_ns;
    if (end < x->from_ns) /* a window past the end of the run is empty */
        end = x->from_ns;
    char comment[4200];
    value_type(w, PROFILE_SAMPLE_TYPE, "alloc_objects", "count");
    value_type(w, PROFILE_SAMPLE_TYPE, "alloc_space", "bytes");
    value_type(w, PROFILE_SAMPLE_TYPE, "inuse_objects", "count");
    value_type(w, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
    static const char *const leak_types[8][2] = {
        {"reachable_space", "bytes"},   {"possible_space", "bytes"},
        {"indirect_space", "bytes"},    {"definite_space", "bytes"},
        {"reachable_objects", "count"}, {"possible_objects", "count"},
        {"indirect_objects", "count"},  {"definite_objects", "count"}};
    for (int k = 0; x->leak_by_stack && k < 8; k++)
        value_type(w, PROFILE_SAMPLE_TYPE, leak_types[k][0], leak_types[k][1]);
    value_type(w, PROFILE_PERIOD_TYPE, "space", "bytes");
    pb_uint(&w->out, PROFILE_PERIOD, 1); /* every allocation is in the trace */
    pb_uint(&w->out, PROFILE_DEFAULT_SAMPLE_TYPE, str_id(w, "inuse_space"));
    if (w->t->start_realtime_ns)
        pb_uint(&w->out, PROFILE_TIME_NANOS, w->t->start_realtime_ns + x->from_ns);
    pb_uint(&w->out, PROFILE_DURATION_NANOS, end - x->from_ns);
    snprintf(comment, sizeof(comment), "memviz trace %s", x->trace_path);
    pb_uint(&w->out, PROFILE_COMMENT, str_id(w, comment));
    if (w->t->sample_bytes) { /* memviz run --sample: estimates */
        snprintf(comment, sizeof(comment),
                 "sampled: one allocation every %llu bytes on average; every value is an estimate",
                 (unsigned long long)w->t->sample_bytes);
        pb_uint(&w->out, PROFILE_COMMENT, str_id(w, comment));
    }
    if (x->from_ns || x->to_ns != UINT64_MAX) {
        snprintf(comment, sizeof(comment), "window from %.9g s to %.9g s", x->from_ns / 1e9,
                 end / 1e9);
        pb_uint(&w->out, PROFILE_COMMENT, str_id(w, comment));
    }
}

/* The string table goes last, once every string has its id. */
static void write_strings(struct pprof *w)
{
    for (size_t id = 0; id <= w->strs.n; id++) {
        const char *s = mvz_strtab_get(&w->strs, (uint32_t)id);
        pb_bytes(&w->out, PROFILE_STRING_TABLE, s, strlen(s));
    }
}

static int write_gzip(const struct pb *b, FILE *out)
{
    z_stream z = {0};
    uint8_t chunk[65536];
    int rc;
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16 /* gzip */, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    z.next_in = b->p;
    z.avail_in = (uInt)b->n; /* the message is far below 4 GiB */
    do {
        z.next_out = chunk;
        z.avail_out = sizeof(chunk);
        rc = deflate(&z, Z_FINISH);
        fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out);
    } while (rc == Z_OK);
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -1;
}

static void pprof_free(struct pprof *w)
{
    mvz_strtab_free(&w->strs);
    mvz_strtab_free(&w->funcs);
    mvz_strtab_free(&w->locs);
    mvz_strtab_free(&w->addrs);
    free(w->addr_loc.v);
    free(w->out.p);
    free(w->msg.p);
    free(w->sub.p);
    free(w->fn.p);
    free(w->tmp.p);
    free(w->frames);
    free(w->loc_ids);
}

int mvz_export_pprof(struct mvz_export *x)
{
    struct pprof w = {.x = x, .t = &x->p->trace};
    w.frames = malloc(FRAMES_MAX * sizeof(*w.frames));
    w.loc_ids = malloc(FRAMES_MAX * sizeof(*w.loc_ids));
    w.failed = !w.frames || !w.loc_ids;
    if (!w.failed) {
        write_header(&w);
        write_samples(&w);
        write_mappings(&w);
        write_strings(&w);
    }
    int rc = -1;
    if (w.failed || w.out.failed)
        mvz_error("export: out of memory");
    else if (w.out.n > UINT32_MAX || write_gzip(&w.out, x->out) < 0)
        mvz_error("export: cannot compress the profile");
    else
        rc = 0;
    pprof_free(&w);
    return rc;
}
