# ThreadSanitizer checks of the agent, included by the top Makefile (which
# defines B, AGENT_SRC, AGENT_CFLAGS, WARN, AGENT, CLI and the test programs).
#
#   make tsan        builds $(B)/tsan/libmemviz.so: the agent's sources
#                    compiled with -fsanitize=thread (and libtsan as a
#                    dependency), the gate that lets TSan host it in
#                    uninstrumented programs (tests/tsan/gate.c), and a
#                    positive control (tests/tsan/race_control.c)
#   make tsan-test   runs the threaded test programs with it (LD_PRELOAD =
#                    gate, TSan agent, libtsan; see tests/tsan/run_tsan.py)
#                    and fails on any ThreadSanitizer report, or when the
#                    traces' numbers differ from the normal agent's; and runs
#                    every command of $(B)/tsan/memviz (the CLI built with
#                    -fsanitize=thread: its replay reads ahead in a thread)
#
# TSAN_ARGS passes options to run_tsan.py, e.g. TSAN_ARGS="-k threads --repeat 5".

TSAN_DIR := $(B)/tsan
TSAN_AGENT := $(TSAN_DIR)/libmemviz.so
TSAN_GATE := $(TSAN_DIR)/libmvztsangate.so
TSAN_CONTROL := $(TSAN_DIR)/race_control
TSAN_OBJ := $(patsubst src/%.c,$(TSAN_DIR)/obj/%.o,$(AGENT_SRC)) \
	$(patsubst src/%.S,$(TSAN_DIR)/obj/%.o,$(AGENT_ASM))
TSAN_CLI := $(TSAN_DIR)/memviz
TSAN_CLI_OBJ := $(patsubst src/%.c,$(TSAN_DIR)/obj-cli/%.o,$(LIB_SRC) src/cmd/main.c) \
	$(TSAN_DIR)/obj-cli/gen/ui/assets.o
# The runtime the compiler links -fsanitize=thread code against; it must be
# preloaded too, ahead of libc (see run_tsan.py).
LIBTSAN := $(shell $(CC) -print-file-name=libtsan.so.2)
TSAN_ARGS ?=

.PHONY: tsan tsan-test

tsan: $(TSAN_AGENT) $(TSAN_GATE) $(TSAN_CONTROL) $(TSAN_CLI)

$(TSAN_DIR)/obj-cli/%.o: src/%.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC [cli, tsan] $<"
	@$(CC) $(CLI_CFLAGS) -O1 -fsanitize=thread -c $< -o $@

$(TSAN_DIR)/obj-cli/gen/ui/assets.o: $(UI_ASSETS_C) src/ui/assets.h
	@mkdir -p $(dir $@)
	@$(CC) $(CLI_CFLAGS) -c $< -o $@

$(TSAN_CLI): $(TSAN_CLI_OBJ)
	$(CC) -fsanitize=thread -o $@ $^ $(CLI_LIBS)

$(TSAN_DIR)/obj/%.o: src/%.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC [agent, tsan] $<"
	@$(CC) $(AGENT_CFLAGS) -fsanitize=thread -c $< -o $@

$(TSAN_DIR)/obj/%.o: src/%.S $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  AS [agent, tsan] $<"
	@$(CC) $(AGENT_CFLAGS) -c $< -o $@

$(TSAN_AGENT): $(TSAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -fsanitize=thread -o $@ $^ -Wl,-z,nodelete -Wl,--no-undefined \
		-lzstd -ldl -lpthread -lm

# Not instrumented: it runs before TSan has set up a thread. Linked against
# libtsan for TSan's allocator entry points (__interceptor_malloc, ...).
$(TSAN_GATE): tests/tsan/gate.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -O2 -g -fPIC -shared -o $@ $< -ltsan -ldl -lpthread

$(TSAN_CONTROL): tests/tsan/race_control.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -O0 -g -fno-builtin -pthread -o $@ $<

tsan-test: tsan $(AGENT) $(CLI) programs
	python3 tests/tsan/run_tsan.py --tsan-agent $(TSAN_AGENT) --gate $(TSAN_GATE) \
		--libtsan $(LIBTSAN) --control $(TSAN_CONTROL) --agent $(AGENT) --memviz $(CLI) \
		--tsan-memviz $(TSAN_CLI) \
		--programs $(B)/tests/programs \
		$(addprefix --suppressions ,$(wildcard tests/tsan/suppressions.txt)) $(TSAN_ARGS)
