/*
 * format.h - the memviz trace format: constants shared by the agent (writer)
 * and the CLI (reader). docs/FORMAT.md describes the same thing byte by byte;
 * change both together and bump MVZ_FORMAT_MAJOR on incompatible changes.
 *
 * A trace file is a 16-byte header followed by chunks. Each chunk is
 *   "MVZC" | u32le compressed_len | u32le raw_len | zstd frame (with checksum)
 * and decompresses to a sequence of records:
 *   u8 kind | uvarint payload_len | payload
 * A record never spans two chunks. Readers skip kinds they do not know.
 */
#ifndef MVZ_TRACE_FORMAT_H
#define MVZ_TRACE_FORMAT_H

#include <stdint.h>

#define MVZ_FILE_MAGIC "MVZTRACE"
#define MVZ_FILE_MAGIC_LEN 8
#define MVZ_FILE_HEADER_LEN 16
/* 2: events may have COARSE_TS times, which a 1.x reader would misread.
 * 3: heap events are in HEAP records, which a 2.x reader would skip.
 * 4: HEAP_STREAMS records; a release names a thread (FREE_OTHER) differently;
 *    a STACK record may take its outer frames from an earlier stack (base,
 *    shared), which a 3.x reader would read as frames.
 * 5: HEAP records may hold GROUPs: events of one time unit written thread
 *    by thread, whose inner heap states a 4.x reader would take as real.
 * Readers read every major from MVZ_FORMAT_MAJOR_OLDEST on. */
#define MVZ_FORMAT_MAJOR 5
#define MVZ_FORMAT_MAJOR_OLDEST 1
#define MVZ_FORMAT_MINOR 9

#define MVZ_CHUNK_MAGIC "MVZC"
#define MVZ_CHUNK_HEADER_LEN 12
/* Upper bound on a chunk's raw size; readers reject larger claims. */
#define MVZ_CHUNK_MAX_RAW (64u << 20)
/* Upper bound on the events of one EVENTS record (the agent writes at most
 * EVENTS_PER_RECORD, src/agent/collector.c); readers treat a larger count as
 * damage, so that a few KiB of highly compressible chunk cannot make them
 * hold millions of events at once. */
#define MVZ_EVENTS_MAX_PER_RECORD (1u << 16)
/* Upper bound on the frames of a STACK record that takes frames from a base
 * (format 4; the agent's depth cap is no larger): without it, a chain of
 * small records could each claim a little more than the last and make
 * readers hold quadratically more frames than the file has bytes. */
#define MVZ_STACK_MAX_FRAMES 1024u

enum mvz_record_kind {
    MVZ_REC_PROCESS = 1,       /* who this trace is about */
    MVZ_REC_MODULE_LOAD = 2,   /* an ELF object mapped into the process */
    MVZ_REC_MODULE_UNLOAD = 3, /* an ELF object unmapped (dlclose) */
    MVZ_REC_STACK = 4,         /* a deduplicated call stack */
    MVZ_REC_THREAD = 5,        /* a thread seen for the first time */
    MVZ_REC_EVENTS = 6,        /* a batch of heap events of one thread (format 1-2) */
    MVZ_REC_RSS = 7,           /* resident set size sample */
    MVZ_REC_CHILD = 8,         /* a child process and its trace file */
    MVZ_REC_EXEC = 9,          /* this image called exec; trace ends here */
    MVZ_REC_EXIT = 10,         /* how the process ended */
    MVZ_REC_END = 11,          /* the agent finished writing cleanly */
    MVZ_REC_LOST = 12,         /* events the agent could not record */
    MVZ_REC_WATERMARK = 13,    /* every event with a smaller key is in the trace (1-2) */
    MVZ_REC_HEAP = 14,         /* heap events of every thread, in order (format 3-) */
    MVZ_REC_HEAP_STREAMS = 15, /* the same, each kind of field apart (format 4-) */
    MVZ_REC_NOTICE = 16,       /* something the agent could not see, in words (5.1) */
    /* A heap snapshot (5.3), written by a fork of the process that took
     * it: SNAPSHOT, then its BLOCKS, EDGES and ROOTS records, then
     * SNAPSHOT_END. A snapshot without its END is incomplete. */
    MVZ_REC_SNAPSHOT = 32,
    MVZ_REC_SNAPSHOT_BLOCKS = 35,
    MVZ_REC_SNAPSHOT_EDGES = 36,
    MVZ_REC_SNAPSHOT_ROOTS = 37,
    MVZ_REC_SNAPSHOT_END = 38,
    MVZ_REC_SNAPSHOT_CONTENTS = 39, /* the blocks' bytes (--snapshot-contents; 5.4) */
    MVZ_REC_SAMPLING = 40,  /* --sample: allocations sampled every N bytes on average (5.6) */
    MVZ_REC_ADDRS = 41,     /* --addresses: where the next HEAP record's new blocks are (5.8) */
    MVZ_REC_CALLGRAPH = 42, /* --callgraph: a thread's calling-context tree (5.9; callgraph.h) */
    /* Only in an index (TRACE.mvzi, src/analysis/index.h): what a replay
     * of the whole run learnt, for the build that wrote it. */
    MVZ_REC_INDEX_HEAD = 48,
    MVZ_REC_INDEX_SUMMARY = 49,
    MVZ_REC_INDEX_SITES = 50,
    MVZ_REC_INDEX_THREADS = 51,
    MVZ_REC_INDEX_MIXED = 52,
    MVZ_REC_INDEX_TIMELINE = 53,
    MVZ_REC_INDEX_CHANGES = 54,
    /* Reserved for later capabilities; readers skip them today. */
    MVZ_REC_USER = 33, /* the instrumentation API (5.5): a user record, below */
    MVZ_REC_CALL_EDGE = 34,
};

/* What took a snapshot. */
enum mvz_snap_trigger {
    MVZ_SNAP_API = 1,     /* memviz_snapshot(name) */
    MVZ_SNAP_SIGNAL = 2,  /* memviz run --snapshot-on SIGNAL */
    MVZ_SNAP_EVERY = 3,   /* memviz run --snapshot-every */
    MVZ_SNAP_COMMAND = 4, /* memviz snapshot PID */
    MVZ_SNAP_EXIT = 5,    /* at exit: the leak scan */
};

/* A snapshot block's flags. */
#define MVZ_SNAP_BLOCK_IGNORED 1u /* memviz_ignore: not to be reported */

/* What a root region is. */
enum mvz_root_kind {
    MVZ_ROOT_GLOBAL = 1,     /* a module's writable data (.data, .bss, ...) */
    MVZ_ROOT_TLS = 2,        /* thread-local storage */
    MVZ_ROOT_STACK = 3,      /* a thread's stack, from its stack pointer */
    MVZ_ROOT_REGISTER = 4,   /* a thread's registers */
    MVZ_ROOT_MAPPING = 5,    /* a writable mapping the program made itself */
    MVZ_ROOT_REGISTERED = 6, /* memviz_register_root */
};

/* How a pointer reaches a block: at its start, or inside it (an interior
 * pointer), which one of memcheck's heuristics may take for a real one. */
enum mvz_edge_kind {
    MVZ_EDGE_START = 0,
    MVZ_EDGE_INTERIOR = 1,
    MVZ_EDGE_STDSTRING = 2,           /* interior, as a std::string's data pointer */
    MVZ_EDGE_LENGTH64 = 3,            /* interior, 8 bytes in, after a 64-bit length */
    MVZ_EDGE_NEWARRAY = 4,            /* interior, 8 bytes in, after new[]'s count */
    MVZ_EDGE_MULTIPLEINHERITANCE = 5, /* interior, at a second base's vtable */
    MVZ_EDGE_KINDS = 6,
};

/* What a NOTICE record is about. */
enum mvz_notice_code {
    /* The program's malloc (or free, calloc, realloc) is another object's,
     * preloaded before the agent or linked into the executable: its
     * allocations do not reach the agent. */
    MVZ_NOTICE_FOREIGN_ALLOCATOR = 1,
};

/* Which API call made or released a block. Stored with every event so that
 * mismatched pairs (malloc/delete, new[]/delete) can be reported. */
enum mvz_entry {
    MVZ_E_MALLOC = 0,
    MVZ_E_CALLOC,
    MVZ_E_REALLOC,
    MVZ_E_REALLOCARRAY,
    MVZ_E_POSIX_MEMALIGN,
    MVZ_E_ALIGNED_ALLOC,
    MVZ_E_MEMALIGN,
    MVZ_E_VALLOC,
    MVZ_E_PVALLOC,
    MVZ_E_NEW,
    MVZ_E_NEW_ARRAY,
    MVZ_E_NEW_NOTHROW,
    MVZ_E_NEW_ARRAY_NOTHROW,
    MVZ_E_NEW_ALIGNED,
    MVZ_E_NEW_ARRAY_ALIGNED,
    MVZ_E_NEW_ALIGNED_NOTHROW,
    MVZ_E_NEW_ARRAY_ALIGNED_NOTHROW,
    MVZ_E_FREE,
    MVZ_E_DELETE,
    MVZ_E_DELETE_ARRAY,
    MVZ_E_DELETE_SIZED,
    MVZ_E_DELETE_ARRAY_SIZED,
    MVZ_E_DELETE_ALIGNED,
    MVZ_E_DELETE_ARRAY_ALIGNED,
    MVZ_E_DELETE_SIZED_ALIGNED,
    MVZ_E_DELETE_ARRAY_SIZED_ALIGNED,
    MVZ_E_DELETE_NOTHROW,
    MVZ_E_DELETE_ARRAY_NOTHROW,
    MVZ_E_DELETE_ALIGNED_NOTHROW,
    MVZ_E_DELETE_ARRAY_ALIGNED_NOTHROW,
    MVZ_E_COUNT
};
/* Entries below this one make blocks; the others release them. */
#define MVZ_E_ALLOC_COUNT MVZ_E_FREE

/* Event operation, the low bits of an event's first byte. */
enum mvz_op {
    MVZ_OP_ALLOC = 0, /* a block came into existence */
    MVZ_OP_FREE = 1,  /* a block was released */
    MVZ_OP_NOP = 2,   /* a sequence number used up with no effect (failed realloc) */
    MVZ_OP_TAG = 5,   /* agent rings only: memviz_tag_mark (addr; size: the tag's id) */
};

/* How a process ended (EXIT record). */
enum mvz_exit_how {
    MVZ_EXIT_UNKNOWN = 0,
    MVZ_EXIT_RETURN = 1, /* returned from main */
    MVZ_EXIT_EXIT = 2,   /* exit() */
    MVZ_EXIT__EXIT = 3,  /* _exit() / _Exit() */
    MVZ_EXIT_SIGNAL = 4, /* killed by a signal */
    MVZ_EXIT_STATUS = 5, /* exit status seen by the parent (waitpid), path unknown */
    MVZ_EXIT_QUICK = 6,  /* quick_exit() */
};

/* Who wrote an EXIT record. The CLI's, from waitpid, is authoritative. */
enum mvz_exit_source {
    MVZ_EXIT_FROM_AGENT = 0,
    MVZ_EXIT_FROM_CLI = 1,
};

/* How a child trace came to be (CHILD record). */
enum mvz_child_how {
    MVZ_CHILD_FORK = 1,
    MVZ_CHILD_EXEC = 2, /* a new program image, possibly in a forked child */
};

/* Stack ids 0 and 1 are reserved and never defined by a STACK record. */
#define MVZ_STACK_NONE 0   /* no stack recorded */
#define MVZ_STACK_NESTED 1 /* allocation made while the agent was busy (signal handler) */
#define MVZ_STACK_FIRST 2

static inline const char *mvz_entry_name(unsigned e)
{
    static const char *const names[MVZ_E_COUNT] = {
        "malloc",
        "calloc",
        "realloc",
        "reallocarray",
        "posix_memalign",
        "aligned_alloc",
        "memalign",
        "valloc",
        "pvalloc",
        "operator new",
        "operator new[]",
        "operator new(nothrow)",
        "operator new[](nothrow)",
        "operator new(align)",
        "operator new[](align)",
        "operator new(align, nothrow)",
        "operator new[](align, nothrow)",
        "free",
        "operator delete",
        "operator delete[]",
        "operator delete(sized)",
        "operator delete[](sized)",
        "operator delete(align)",
        "operator delete[](align)",
        "operator delete(sized, align)",
        "operator delete[](sized, align)",
        "operator delete(nothrow)",
        "operator delete[](nothrow)",
        "operator delete(align, nothrow)",
        "operator delete[](align, nothrow)",
    };
    return e < MVZ_E_COUNT ? names[e] : "unknown";
}

/* USER records (33): the first field says which. */
enum mvz_user_record {
    MVZ_USER_DEF = 1,              /* an instrument: id, kind, name */
    MVZ_USER_SAMPLE = 2,           /* ts, then (id, value) of the instruments that changed */
    MVZ_USER_LOG = 3,              /* ts, tid, the line (memviz_log) */
    MVZ_USER_PHASE = 4,            /* ts, tid, the phase's name (memviz_phase) */
    MVZ_USER_STOPWATCH_SAMPLE = 5, /* ts, then (id, tid, sections, ns) that changed */
    MVZ_USER_TAG = 6,              /* ts, tag id, the block's name, its size: a mark */
    MVZ_USER_TEXT = 7,             /* ts, id, the text: a string value set (5.7) */
};

enum mvz_user_kind {
    MVZ_USER_COUNTER = 1,      /* memviz_counter: an int64 sum */
    MVZ_USER_VALUE_INT = 2,    /* memviz_value: an int64 set by the program */
    MVZ_USER_VALUE_DOUBLE = 3, /* memviz_value_new_double: a double's bits */
    MVZ_USER_STOPWATCH = 4,    /* memviz_stopwatch: time in sections, per thread */
    MVZ_USER_TAG_KIND = 5,     /* memviz_tag: blocks the program marked */
    MVZ_USER_VALUE_TEXT = 6,   /* memviz_value_new_string: a string (5.7) */
};
#define MVZ_USER_NAME_MAX 64
#define MVZ_USER_TEXT_MAX 128 /* a string value's bytes, its NUL included */

#endif
