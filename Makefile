# memviz build. `make` builds everything into build/; `make test` runs the suite;
# `make demo` profiles a bundled example; `make install PREFIX=...` installs.

CC ?= gcc
CXX ?= g++
PREFIX ?= /usr/local
B := build

WARN := -Wall -Wextra -Werror
BASE_CFLAGS := -std=gnu11 $(WARN) -O2 -g -D_GNU_SOURCE -Isrc -fno-strict-aliasing
AGENT_CFLAGS := $(BASE_CFLAGS) -fPIC -fvisibility=hidden -fexceptions -ftls-model=initial-exec \
	-fno-omit-frame-pointer -DMVZ_AGENT_MEM
# The agent is one unit to the optimiser: its hot path crosses files (hook,
# ring, stack table, unwinder) on every allocation, and the writer's merge
# calls into the collector on every event. 6% less CPU on the list churn.
AGENT_LTO := -flto=auto
CLI_CFLAGS := $(BASE_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

TRACE_SRC := src/trace/chunk_writer.c src/trace/heap_group.c src/trace/reader.c
UTIL_SRC := $(wildcard src/util/*.c)
AGENT_SRC := $(wildcard src/agent/*.c) src/trace/chunk_writer.c src/trace/heap_group.c
ANALYSIS_SRC := $(wildcard src/analysis/*.c)
EXPORT_SRC := $(wildcard src/export/*.c)
SERVER_SRC := $(wildcard src/server/*.c)
UI_SRC := $(wildcard src/ui/*.c)
TUI_SRC := $(wildcard src/tui/*.c)
CMD_SRC := $(wildcard src/cmd/*.c)
LIB_SRC := $(TRACE_SRC) $(UTIL_SRC) $(ANALYSIS_SRC) $(EXPORT_SRC) $(UI_SRC) $(SERVER_SRC) $(TUI_SRC) \
	$(filter-out src/cmd/main.c,$(CMD_SRC))
CLI_LIBS := -lzstd -ldw -lelf -lz -lm -lpthread -lmicrohttpd -ljansson -lncursesw -ltinfo

AGENT := $(B)/lib/libmemviz.so
STUB := $(B)/lib/libmemviz-stub.so
CLI := $(B)/bin/memviz
CLI_ASAN := $(B)/asan/memviz

# The web UI (web/): TypeScript bundled by esbuild, then compiled into the
# CLI as a C file of bytes (scripts/embed_assets.py), so that `memviz ui`
# needs no node where it runs. web/node_modules comes from install-deps.
WEB_SRC := web/index.html web/package-lock.json $(wildcard web/src/*.ts web/src/*.css)
WEB_OUT := $(B)/web/app.js $(B)/web/app.css
UI_ASSETS_C := $(B)/gen/ui/assets.c

LIB_OBJ := $(patsubst src/%.c,$(B)/obj/%.o,$(LIB_SRC)) $(B)/obj/gen/ui/assets.o
LIB_OBJ_ASAN := $(patsubst src/%.c,$(B)/obj-asan/%.o,$(LIB_SRC)) $(B)/obj-asan/gen/ui/assets.o
# the agent's assembly (the -pg hooks): not link-time optimised
AGENT_ASM := $(wildcard src/agent/*.S)
AGENT_OBJ := $(patsubst src/%.c,$(B)/obj-agent/%.o,$(AGENT_SRC)) \
	$(patsubst src/%.S,$(B)/obj-agent/%.o,$(AGENT_ASM))

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(UNIT_SRC))

PROG_C := $(wildcard tests/programs/*.c)
PROG_CXX := $(wildcard tests/programs/*.cpp)
PROG_BIN := $(patsubst tests/programs/%.c,$(B)/tests/programs/%,$(PROG_C)) \
	$(patsubst tests/programs/%.cpp,$(B)/tests/programs/%,$(PROG_CXX))

.PHONY: all agent cli asan programs unit test demo install clean deps format format-check web-check
all: agent cli $(STUB)

agent: $(AGENT)
cli: $(CLI)
asan: $(CLI_ASAN)
programs: $(PROG_BIN)
unit: $(UNIT_BIN)

$(B)/obj-agent/%.o: src/%.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC [agent] $<"
	@$(CC) $(AGENT_CFLAGS) $(AGENT_LTO) -c $< -o $@

$(B)/obj-agent/%.o: src/%.S $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  AS [agent] $<"
	@$(CC) $(AGENT_CFLAGS) -c $< -o $@

$(B)/obj/%.o: src/%.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CLI_CFLAGS) -c $< -o $@

$(B)/obj-asan/%.o: src/%.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC [asan] $<"
	@$(CC) $(CLI_CFLAGS) $(SAN_FLAGS) -O1 -c $< -o $@

$(WEB_OUT) &: $(WEB_SRC)
	@test -x web/node_modules/.bin/esbuild || { echo "memviz: web/node_modules is missing: run scripts/install-deps.sh"; exit 1; }
	@mkdir -p $(B)/web
	@echo "  ESBUILD web/src/main.ts"
	@web/node_modules/.bin/esbuild web/src/main.ts --bundle --minify --target=es2020 \
		--log-level=warning --outfile=$(B)/web/app.js

$(UI_ASSETS_C): $(WEB_OUT) scripts/embed_assets.py
	@mkdir -p $(dir $@)
	@python3 scripts/embed_assets.py $@ / web/index.html "text/html; charset=utf-8" \
		/app.js $(B)/web/app.js "text/javascript; charset=utf-8" \
		/app.css $(B)/web/app.css "text/css; charset=utf-8"

$(B)/obj/gen/ui/assets.o: $(UI_ASSETS_C) src/ui/assets.h
	@mkdir -p $(dir $@)
	@$(CC) $(CLI_CFLAGS) -c $< -o $@

$(B)/obj-asan/gen/ui/assets.o: $(UI_ASSETS_C) src/ui/assets.h
	@mkdir -p $(dir $@)
	@$(CC) $(CLI_CFLAGS) $(SAN_FLAGS) -O1 -c $< -o $@

# Type-checks the web UI (esbuild only strips the types).
web-check:
	web/node_modules/.bin/tsc -p web

# The agent keeps its symbols private (-fvisibility=hidden); only the
# interposed allocator entry points are exported. libunwind is loaded with
# dlopen(RTLD_LOCAL) at run time so that its _Unwind_* and backtrace symbols
# never interpose the program's own.
$(AGENT): $(AGENT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(AGENT_CFLAGS) $(AGENT_LTO) -shared -o $@ $^ -Wl,-z,nodelete -Wl,--no-undefined -lzstd -ldl -lpthread -lm

# include/memviz.h's functions doing nothing, for programs that call them
# and must run without memviz too; the preloaded agent takes them over.
$(STUB): src/stub/memviz_stub.c include/memviz.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -fPIC -shared -Wl,-soname,libmemviz-stub.so -o $@ $<

$(CLI): $(B)/obj/cmd/main.o $(LIB_OBJ) | $(AGENT)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(CLI_LIBS)

$(CLI_ASAN): $(B)/obj-asan/cmd/main.o $(LIB_OBJ_ASAN)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(CLI_LIBS)

$(B)/tests/unit/%: tests/unit/%.c $(LIB_OBJ_ASAN) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CLI_CFLAGS) $(SAN_FLAGS) -O1 -o $@ $< $(LIB_OBJ_ASAN) -lcmocka $(CLI_LIBS)

# The agent's address table is tested on its own (it includes addrmap.c).
$(B)/tests/unit/test_addrmap: src/agent/addrmap.c

# Test programs have known allocation behaviour. They are built without
# optimisation so that every call site survives; per-program flags below.
PROG_CFLAGS := -std=gnu11 -O0 -g -fno-omit-frame-pointer -fno-builtin -pthread
PROG_CXXFLAGS := -std=gnu++17 -O0 -g -fno-omit-frame-pointer -pthread
$(B)/tests/programs/%: tests/programs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) $(PROG_EXTRA_$*) -o $@ $< -ldl $(PROG_LIBS_$*)

$(B)/tests/programs/%: tests/programs/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(PROG_CXXFLAGS) $(PROG_EXTRA_$*) -o $@ $< -ldl $(PROG_LIBS_$*)

-include tests/programs/flags.mk
# Reliability suites that need their own builds (libFuzzer, ThreadSanitizer).
-include tests/fuzz/fuzz.mk
-include tests/tsan/tsan.mk

deps:
	@scripts/install-deps.sh

test: deps
	$(MAKE) format-check web-check
	$(MAKE) all asan programs unit
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done
	python3 tests/integration/run_tests.py --memviz $(CLI) --asan-memviz $(CLI_ASAN) \
		--programs $(B)/tests/programs
	$(MAKE) fuzz-replay
	$(MAKE) tsan-test

demo: deps
	$(MAKE) all $(B)/tests/programs/demo
	$(CLI) run -o $(B)/demo.mvz -- $(B)/tests/programs/demo
	$(CLI) report $(B)/demo.mvz

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/memviz
	install -m 755 $(AGENT) $(DESTDIR)$(PREFIX)/lib/libmemviz.so
	install -m 755 $(STUB) $(DESTDIR)$(PREFIX)/lib/libmemviz-stub.so
	install -d $(DESTDIR)$(PREFIX)/include
	install -m 644 include/memviz.h $(DESTDIR)$(PREFIX)/include/memviz.h
	install -m 644 include/memviz.hpp $(DESTDIR)$(PREFIX)/include/memviz.hpp
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 docs/memviz.1 $(DESTDIR)$(PREFIX)/share/man/man1/memviz.1
	install -m 644 scripts/memviz-completion.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/memviz

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cpp') && echo "format: ok"

clean:
	rm -rf $(B)
