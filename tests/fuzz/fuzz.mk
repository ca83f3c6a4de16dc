# tests/fuzz/fuzz.mk - the libFuzzer target for the trace reader and
# everything after it (tests/fuzz/fuzz_trace.c), included by the top Makefile.
#
#   make fuzz-build     builds $(B)/fuzz/fuzz_trace (clang, ASan + UBSan + libFuzzer)
#   make fuzz-replay    runs it once over tests/fuzz/corpus and tests/fuzz/crashes;
#                       fails on any crash, leak, hang or sanitizer report (make test)
#   make fuzz-run       fuzzes for FUZZ_SECONDS (default 1800) on one core: new
#                       inputs go to tests/fuzz/corpus, failing ones to tests/fuzz/crashes
#                       (then make fuzz-minimize keeps the corpus small)
#   make fuzz-minimize  replaces tests/fuzz/corpus by a minimized merge of itself
#
# The CLI's sources are compiled again with clang and the sanitizers into
# $(B)/fuzz/obj; FUZZ_CC picks another clang.

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 1800
FUZZ_FLAGS ?=
FUZZ_DIR := tests/fuzz
FUZZ_CORPUS := $(FUZZ_DIR)/corpus
FUZZ_CRASHES := $(FUZZ_DIR)/crashes
FUZZ_BIN := $(B)/fuzz/fuzz_trace
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -Isrc -fno-strict-aliasing -fno-omit-frame-pointer \
	-Wall -Wextra
# Every UBSan finding stops the run, as an ASan one does.
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_OBJ := $(patsubst src/%.c,$(B)/fuzz/obj/%.o,$(LIB_SRC)) $(B)/fuzz/obj/gen/ui/assets.o
# Limits of every run: one input may not take 10 s or 2 GiB.
FUZZ_LIMITS := -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048
# libFuzzer keeps its own reports on a copy of stderr; the CLI's messages
# about damaged traces are dropped.
FUZZ_QUIET := -close_fd_mask=3

.PHONY: fuzz-build fuzz-replay fuzz-run fuzz-minimize
fuzz-build: $(FUZZ_BIN)

$(B)/fuzz/obj/%.o: src/%.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC [fuzz] $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@

$(B)/fuzz/obj/gen/ui/assets.o: $(UI_ASSETS_C) src/ui/assets.h
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_BIN): $(FUZZ_DIR)/fuzz_trace.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(CLI_LIBS)

# Every file once, as it is (-max_len well above any committed input, so
# none is cut). libFuzzer stops at the first failing input and exits non-zero;
# the input is copied to $(B)/fuzz/replay-*.
fuzz-replay: $(FUZZ_BIN)
	@test -n "$$(ls -A $(FUZZ_CORPUS) 2>/dev/null)" || { echo "fuzz-replay: $(FUZZ_CORPUS) is empty"; exit 1; }
	$(FUZZ_BIN) -runs=0 -max_len=4194304 $(FUZZ_LIMITS) $(FUZZ_QUIET) \
		-artifact_prefix=$(B)/fuzz/replay- $(FUZZ_CORPUS) $(wildcard $(FUZZ_CRASHES))
	@echo "fuzz-replay: ok ($$(ls $(FUZZ_CORPUS) | wc -l) corpus inputs, \
	$$(ls $(FUZZ_CRASHES) 2>/dev/null | wc -l) former crashes)"

# One core: -fork=1 runs one fuzzing process at a time and goes on after a
# crash, a leak, a timeout or running out of memory, so that one bug does not
# end the run; every failing input lands in $(FUZZ_CRASHES) (crash-*,
# leak-*, timeout-*, oom-*: find the cause, then rename it after the bug).
# FUZZ_FLAGS='-fork=0' stops at the first failure instead.
fuzz-run: $(FUZZ_BIN)
	@mkdir -p $(FUZZ_CORPUS) $(FUZZ_CRASHES)
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=65536 $(FUZZ_LIMITS) $(FUZZ_QUIET) \
		-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
		-print_final_stats=1 -artifact_prefix=$(FUZZ_CRASHES)/ $(FUZZ_FLAGS) $(FUZZ_CORPUS)

# The seeds (real traces, seed-*, and hand-damaged ones, damaged-*) stay
# under their names; of the rest, only inputs that reach new edges are kept
# (-use_counters=0: with hit counts too, the corpus is ten times larger).
fuzz-minimize: $(FUZZ_BIN)
	rm -rf $(B)/fuzz/corpus-merged && mkdir -p $(B)/fuzz/corpus-merged
	cp $(FUZZ_CORPUS)/seed-* $(FUZZ_CORPUS)/damaged-* $(B)/fuzz/corpus-merged/
	$(FUZZ_BIN) -merge=1 -use_counters=0 -max_len=65536 $(FUZZ_LIMITS) $(FUZZ_QUIET) \
		$(B)/fuzz/corpus-merged $(FUZZ_CORPUS)
	rm -rf $(FUZZ_CORPUS) && mv $(B)/fuzz/corpus-merged $(FUZZ_CORPUS)
