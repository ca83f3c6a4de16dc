# Per-program build settings for tests/programs, included by the top Makefile
# (after B and the `programs` target are defined).
#   PROG_EXTRA_<name>: extra compiler flags (after the defaults, so they win)
#   PROG_LIBS_<name>:  extra libraries (after -ldl)

# nofp: optimised, no frame pointers; unwinding must use DWARF CFI.
PROG_EXTRA_nofp := -O2 -fomit-frame-pointer
# bigframe: the same, with frames of 20,000 bytes.
PROG_EXTRA_bigframe := -O2 -fomit-frame-pointer

# sighandler uses POSIX timers (in libc since glibc 2.34; -lrt is harmless).
PROG_LIBS_sighandler := -lrt

# dlopen: the plugin it loads lives next to it.
programs: $(B)/tests/programs/libmvzplugin.so
$(B)/tests/programs/dlopen: | $(B)/tests/programs/libmvzplugin.so
# forkexec execs churn, found next to itself.
$(B)/tests/programs/forkexec: | $(B)/tests/programs/churn

$(B)/tests/programs/libmvzplugin.so: tests/programs/plugin/mvzplugin.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -g -O0 -fno-omit-frame-pointer -o $@ $<
# libmvzalloc.so: an allocator of its own, preloaded before the agent.
programs: $(B)/tests/programs/libmvzalloc.so
$(B)/tests/programs/libmvzalloc.so: tests/programs/plugin/mvzalloc.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -g -O2 -o $@ $<
# spawn execs / posix_spawns churn, found next to itself.
$(B)/tests/programs/spawn: | $(B)/tests/programs/churn

# churn_nodebug: churn without debug information (symbol table names only).
programs: $(B)/tests/programs/churn_nodebug
$(B)/tests/programs/churn_nodebug: tests/programs/churn.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g0 -fno-omit-frame-pointer -fno-builtin -o $@ $<

# early: linked against a library whose constructor allocates before main.
programs: $(B)/tests/programs/libmvzearly.so
$(B)/tests/programs/libmvzearly.so: tests/programs/early/mvzearly.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -g -O0 -fno-omit-frame-pointer -o $@ $<
$(B)/tests/programs/early: | $(B)/tests/programs/libmvzearly.so
PROG_LIBS_early := -L$(B)/tests/programs -lmvzearly -Wl,-rpath,'$$ORIGIN'

# static_prog: statically linked; `memviz run` must say it cannot trace it.
PROG_EXTRA_static_prog := -static

# bigtrace_gen writes synthetic traces with the trace library's chunk writer
# (tests/integration/cases_bigtrace.py); it is run directly, not profiled.
PROG_EXTRA_bigtrace_gen := -O2 -Isrc
PROG_LIBS_bigtrace_gen := src/trace/chunk_writer.c -lzstd
$(B)/tests/programs/bigtrace_gen: src/trace/chunk_writer.c $(wildcard src/trace/*.h)
# apitest calls include/memviz.h's functions through the stub library.
PROG_LIBS_apitest := -L$(B)/lib -lmemviz-stub -Wl,-rpath,$(abspath $(B)/lib)
$(B)/tests/programs/apitest: $(B)/lib/libmemviz-stub.so
# instrumented uses the instrumentation API through the stub library.
PROG_LIBS_instrumented := -L$(B)/lib -lmemviz-stub -Wl,-rpath,$(abspath $(B)/lib)
$(B)/tests/programs/instrumented: $(B)/lib/libmemviz-stub.so
# tablewatch: include/memviz.hpp's adapter, through the stub library.
PROG_LIBS_tablewatch := -L$(B)/lib -lmemviz-stub -Wl,-rpath,$(abspath $(B)/lib)
$(B)/tests/programs/tablewatch: $(B)/lib/libmemviz-stub.so include/memviz.hpp
# forkcount: instruments across fork, through the stub library.
PROG_LIBS_forkcount := -L$(B)/lib -lmemviz-stub -Wl,-rpath,$(abspath $(B)/lib)
$(B)/tests/programs/forkcount: $(B)/lib/libmemviz-stub.so
# calls: the call graph's test program (memviz run --callgraph).
PROG_EXTRA_calls := -finstrument-functions
PROG_EXTRA_calls_cxx := -finstrument-functions
# The same programs built with -pg (mcount) and -pg -mfentry (__fentry__).
programs: $(B)/tests/programs/calls_pg $(B)/tests/programs/calls_fentry \
	$(B)/tests/programs/calls_cxx_pg
$(B)/tests/programs/calls_pg: tests/programs/calls.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -pg -o $@ $< -ldl
$(B)/tests/programs/calls_fentry: tests/programs/calls.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -pg -mfentry -o $@ $< -ldl
$(B)/tests/programs/calls_cxx_pg: tests/programs/calls_cxx.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(PROG_CXXFLAGS) -pg -o $@ $< -ldl
PROG_EXTRA_calls_signal := -finstrument-functions
programs: $(B)/tests/programs/calls_signal_pg
$(B)/tests/programs/calls_signal_pg: tests/programs/calls_signal.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -pg -o $@ $< -ldl
PROG_EXTRA_calls_deep := -finstrument-functions
programs: $(B)/tests/programs/calls_deep_pg
$(B)/tests/programs/calls_deep_pg: tests/programs/calls_deep.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -pg -o $@ $< -ldl
# -fpatchable-function-entry=5: memviz patches the entries in at load time.
programs: $(B)/tests/programs/calls_patch
$(B)/tests/programs/calls_patch: tests/programs/calls.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fpatchable-function-entry=5 -o $@ $< -ldl
# calls_o2: optimised code (tail calls, exit hooks made tail calls).
PROG_EXTRA_calls_o2 := -O2 -finstrument-functions
programs: $(B)/tests/programs/calls_o2_pg
$(B)/tests/programs/calls_o2_pg: tests/programs/calls_o2.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -O2 -pg -o $@ $< -ldl
# calls_dispatch: a dispatch among twelve callees; and at -O2 with -pg,
# where each ends in a tail call.
PROG_EXTRA_calls_dispatch := -finstrument-functions
programs: $(B)/tests/programs/calls_dispatch_pg
$(B)/tests/programs/calls_dispatch_pg: tests/programs/calls_dispatch.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -O2 -pg -o $@ $< -ldl
# calls_lib: linked with an instrumented library (its constructor calls).
PROG_EXTRA_calls_lib := -finstrument-functions -L$(B)/tests/programs -Wl,-rpath,'$$ORIGIN'
PROG_LIBS_calls_lib := -lmvzcalls
# calls_libonly: the same program built without instrumentation, the
# library's the only one: memviz run --callgraph accepts it.
programs: $(B)/tests/programs/calls_libonly
$(B)/tests/programs/calls_libonly: tests/programs/calls_lib.c | $(B)/tests/programs/libmvzcalls.so
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< -L$(B)/tests/programs -Wl,-rpath,'$$ORIGIN' -lmvzcalls -ldl
programs: $(B)/tests/programs/libmvzcalls.so
$(B)/tests/programs/calls_lib: | $(B)/tests/programs/libmvzcalls.so
$(B)/tests/programs/libmvzcalls.so: tests/programs/plugin/mvzcalls.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -g -O0 -fno-omit-frame-pointer -finstrument-functions -o $@ $<
PROG_EXTRA_calls_coro := -finstrument-functions
programs: $(B)/tests/programs/calls_coro_pg
$(B)/tests/programs/calls_coro_pg: tests/programs/calls_coro.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -pg -o $@ $< -ldl
PROG_EXTRA_calls_exit := -finstrument-functions
programs: $(B)/tests/programs/calls_exit_pg
$(B)/tests/programs/calls_exit_pg: tests/programs/calls_exit.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -pg -o $@ $< -ldl
