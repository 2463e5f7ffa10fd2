# fuzz.mk - libFuzzer harnesses (fuzz/), their seeds, and the brief fuzz run
# that `make test` includes. Details: docs/FUZZING.md.
#
#   make fuzz                 every harness for FUZZ_SECONDS (default 3600;
#                             `make -j13 fuzz` runs them side by side); corpora
#                             grow in build/fuzz/corpus/<name>, crashes go to
#                             build/fuzz/artifacts/<name>/
#   make fuzz-run-<name>      one harness (frame, etm3_pkt, ptm_pkt,
#                             etm3_flow, ptm_flow, snapshot, image, merge,
#                             qemu_log, gen, print, symbols, accum, perf_data, exec_log)
#   make fuzz-brief           every harness for FUZZ_BRIEF_RUNS inputs (default
#                             2000, a few seconds; gen: FUZZ_BRIEF_RUNS_GEN,
#                             200), fixed PRNG seed
#   make fuzz-seeds           regenerate build/fuzz/seeds/<name>/
#   make fuzz-image           rebuild fuzz/fuzz_image.h from fuzz/image_code.c
#                             (needs arm-linux-gnueabihf-gcc)
#   make fuzz-coverage        line coverage of src/ and the fuzzed tools/ files reached
#                             by the corpora, seeds and regression inputs
#                             (llvm-cov)

FUZZ_CC ?= clang
FUZZ_NAMES := frame etm3_pkt ptm_pkt etm3_flow ptm_flow snapshot image merge qemu_log gen print symbols accum perf_data exec_log
FUZZ_SECONDS ?= 3600
FUZZ_BRIEF_RUNS ?= 2000
# An input of the gen harness runs thousands of instructions through the
# generator and the decoder (about 15 ms with the sanitizers).
FUZZ_BRIEF_RUNS_GEN ?= 200
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := $(CSTD) $(WARN) -O1 -g $(FUZZ_SAN)
# Only what a harness input reaches matters; inputs bigger than the largest
# seed are rarely useful and slow each run down.
FUZZ_MAX_LEN ?= 65536
FUZZ_OPTS := -timeout=20 -rss_limit_mb=2048 -max_len=$(FUZZ_MAX_LEN)
# How the flow harnesses compare their range and instruction decodes
# (strict, lenient, off: fuzz/fuzz_flow.h). lenient while the known
# difference listed in docs/FUZZING.md is open; strict afterwards.
FUZZ_FLOW_COMPARE ?= strict
# The brief runs of `make test` compare strictly too (no bug is open: an input
# of one would be kept in fuzz/regress/<harness>/open/, which
# test_fuzz_regress runs without failing), and they use a fixed seed and run
# count so that `make test` gives the same answer every time.
FUZZ_BRIEF_FLOW_COMPARE ?= strict
# Harness options: a dictionary when fuzz/<name>.dict exists.
fuzz_dict = $(if $(wildcard fuzz/$(1).dict),-dict=fuzz/$(1).dict)
FUZZ_OBJ := $(LIB_SRC:src/%.c=$(B)/fuzz/obj/%.o)
FUZZ_BIN := $(FUZZ_NAMES:%=$(B)/fuzz/fuzz_%)
FUZZ_SEEDS := $(B)/fuzz/seeds
FUZZ_HDRS := $(wildcard fuzz/*.h)
FUZZ_HAVE_CC := $(shell command -v $(FUZZ_CC) >/dev/null 2>&1 && echo yes)

# The fuzz/regress/ inputs, replayed by tests/test_fuzz_regress.c, which
# includes the harness sources.
export CSD_FUZZ_REGRESS := $(abspath fuzz/regress)
$(B)/tests/test_fuzz_regress $(B)/tests-san/test_fuzz_regress: $(wildcard fuzz/fuzz_*.c) $(wildcard fuzz/*.h)
# The merge harness compiles the tool's merge in.
FUZZ_MERGE_SRC := tools/merge.c tools/merge.h tools/cli.h
$(B)/tests/test_fuzz_regress $(B)/tests-san/test_fuzz_regress $(B)/fuzz/fuzz_merge $(B)/fuzz/cov/fuzz_merge: $(FUZZ_MERGE_SRC)
# fuzz_symbols and fuzz_accum compile the tool's symbol reader and counting
# in (fuzz/fuzz_tools.h: FUZZ_TOOLS_INCLUDED), with libdw when the tool has it.
FUZZ_TOOLS_INCLUDED := tools/dynlib.c tools/slotmap.c tools/symbols.c tools/cov_accum.c tools/prof_accum.c
$(B)/tests/test_fuzz_regress $(B)/tests-san/test_fuzz_regress: $(wildcard tools/*.c) $(wildcard tools/*.h)
$(B)/tests/test_fuzz_regress $(B)/tests-san/test_fuzz_regress: private CPPFLAGS += $(LIBDW_CFLAGS)
$(B)/tests/test_pkt_brief $(B)/tests-san/test_pkt_brief: fuzz/pkt_same.h
$(B)/tests/test_frame $(B)/tests-san/test_frame: fuzz/pkt_same.h
$(B)/tests/test_chunks $(B)/tests-san/test_chunks: fuzz/pkt_same.h

.PHONY: fuzz fuzz-brief fuzz-seeds fuzz-image fuzz-bins fuzz-coverage $(FUZZ_NAMES:%=fuzz-run-%)

# The library instrumented for coverage, as libFuzzer needs it.
$(B)/fuzz/obj/%.o: src/%.c include/csdec.h $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(B)/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_HDRS) $(FUZZ_OBJ) $(wildcard tools/*.c) $(wildcard tools/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) -Isrc $(LIBDW_CFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LIBDW_LDLIBS)

# Harnesses of the tool's code: the tools/*.c files they need
# (FUZZ_TOOLS_<name>) compiled in, with the fuzzer's flags and the tool's
# optional libraries (tools/tools.mk); test_fuzz_regress links them too.
FUZZ_TOOLS_qemu_log := tools/qemu_log.c
FUZZ_TOOLS_exec_log := tools/exec_log.c
FUZZ_TOOLS_print := tools/print.c tools/disasm.c tools/t16_text.c tools/symbols.c tools/dynlib.c
FUZZ_TOOL_HARNESSES := qemu_log print exec_log
define fuzz_tool_rule
$(B)/fuzz/fuzz_$(1): fuzz/fuzz_$(1).c $(FUZZ_HDRS) $(FUZZ_OBJ) $(FUZZ_TOOLS_$(1)) $(wildcard tools/*.h)
	@mkdir -p $$(dir $$@)
	$(FUZZ_CC) $(CPPFLAGS) -Isrc $(FUZZ_CFLAGS) $(TOOL_CFLAGS) -fsanitize=fuzzer -o $$@ $$< $(FUZZ_TOOLS_$(1)) $(FUZZ_OBJ) $(TOOL_LDLIBS) \
	  $(LIBDW_LDLIBS)
$(B)/fuzz/cov/fuzz_$(1): $(FUZZ_TOOLS_$(1)) $(wildcard tools/*.h)
endef
$(foreach h,$(FUZZ_TOOL_HARNESSES),$(eval $(call fuzz_tool_rule,$(h))))
FUZZ_TOOLS_ALL := $(sort $(foreach h,$(FUZZ_TOOL_HARNESSES),$(FUZZ_TOOLS_$(h))))
$(B)/tests/test_fuzz_regress $(B)/tests-san/test_fuzz_regress: $(FUZZ_TOOLS_ALL) $(wildcard tools/*.h)
# (test_fuzz_regress includes fuzz_tools.h too: those files are not linked twice.)
TEST_LDLIBS_test_fuzz_regress += $(filter-out $(FUZZ_TOOLS_INCLUDED),$(FUZZ_TOOLS_ALL)) $(TOOL_CFLAGS) $(TOOL_LDLIBS) \
	$(LIBDW_LDLIBS)

fuzz-bins: $(FUZZ_BIN)

# Seeds are made at run time from the shared captures (never copied into
# the repository) and from the packet encoders.
$(B)/fuzz/seedgen: fuzz/seedgen.c $(FUZZ_HDRS) tests/perf_data_build.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Isrc $(CFLAGS) -o $@ $< $(LIB_OBJ)

$(FUZZ_SEEDS)/.stamp: $(B)/fuzz/seedgen
	rm -rf $(FUZZ_SEEDS)
	$(B)/fuzz/seedgen $(FUZZ_SEEDS)
	@touch $@

fuzz-seeds: $(FUZZ_SEEDS)/.stamp

define fuzz_run_rule
fuzz-run-$(1): $(B)/fuzz/fuzz_$(1) $(FUZZ_SEEDS)/.stamp
	@mkdir -p $(B)/fuzz/corpus/$(1) $(B)/fuzz/artifacts/$(1) $(B)/fuzz/logs
	@echo "== fuzz_$(1) for $(FUZZ_SECONDS)s (log: $(B)/fuzz/logs/$(1).log)"
	@CSD_FUZZ_FLOW_COMPARE=$(FUZZ_FLOW_COMPARE) $(B)/fuzz/fuzz_$(1) $(FUZZ_OPTS) $(call fuzz_dict,$(1)) \
	  -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  -artifact_prefix=$(B)/fuzz/artifacts/$(1)/ $(B)/fuzz/corpus/$(1) $(FUZZ_SEEDS)/$(1) \
	  >$(B)/fuzz/logs/$(1).log 2>&1 || { tail -60 $(B)/fuzz/logs/$(1).log; exit 1; }
	@grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' $(B)/fuzz/logs/$(1).log | sed 's/^/fuzz_$(1) /'
endef
$(foreach h,$(FUZZ_NAMES),$(eval $(call fuzz_run_rule,$(h))))

fuzz: $(FUZZ_NAMES:%=fuzz-run-%)

# A few seconds per harness as part of `make test`: catches a harness that
# no longer builds, or an invariant that the seeds or their first mutations
# break.
ifeq ($(FUZZ_HAVE_CC),yes)
fuzz-brief: $(FUZZ_BIN) $(FUZZ_SEEDS)/.stamp
	@set -e; for h in $(FUZZ_NAMES); do \
	  d=$(B)/fuzz/brief/$$h; rm -rf $$d; mkdir -p $$d/corpus $$d/artifacts; \
	  runs=$(FUZZ_BRIEF_RUNS); [ $$h = gen ] && runs=$(FUZZ_BRIEF_RUNS_GEN); \
	  echo "== fuzz_$$h (brief, $$runs runs)"; \
	  dict=; [ -f fuzz/$$h.dict ] && dict=-dict=fuzz/$$h.dict; \
	  if ! CSD_FUZZ_FLOW_COMPARE=$(FUZZ_BRIEF_FLOW_COMPARE) $(B)/fuzz/fuzz_$$h $(FUZZ_OPTS) $$dict \
	    -seed=1 -runs=$$runs -max_total_time=60 -print_final_stats=1 \
	    -artifact_prefix=$$d/artifacts/ $$d/corpus $(FUZZ_SEEDS)/$$h >$$d/log 2>&1; then \
	    tail -60 $$d/log; echo "fuzz_$$h failed; input in $$d/artifacts/"; exit 1; fi; \
	  grep -E '^stat::number_of_executed_units' $$d/log | sed "s/^/fuzz_$$h /"; \
	done
else
fuzz-brief:
	@echo "fuzz-brief: $(FUZZ_CC) not found, brief fuzz runs skipped"
endif

test: fuzz-brief

fuzz-image: fuzz/image_code.c
	@set -e; t=$$(mktemp -d); trap 'rm -rf $$t' EXIT; \
	for m in arm:0x8000 thumb:0x9000; do isa=$${m%%:*}; addr=$${m#*:}; \
	  arm-linux-gnueabihf-gcc -O2 -m$$isa -march=armv7-a+fp -ffreestanding -fno-pic -nostdlib -static \
	    -Wl,-e,entry -Wl,-Ttext=$$addr -Wl,--build-id=none -o $$t/$$isa.elf fuzz/image_code.c; \
	  arm-linux-gnueabihf-objcopy -O binary -j .text $$t/$$isa.elf $$t/$$isa.bin; \
	done; \
	{ echo '/* fuzz_image.h - generated by `make fuzz-image` from fuzz/image_code.c (do not edit):'; \
	  echo ' * its .text compiled for A32 at 0x8000 and for T32 at 0x9000. */'; \
	  echo '#ifndef CSD_FUZZ_IMAGE_H'; echo '#define CSD_FUZZ_IMAGE_H'; echo; \
	  echo '#define FUZZ_IMAGE_A32_ADDR 0x8000u'; echo '#define FUZZ_IMAGE_T32_ADDR 0x9000u'; echo; \
	  echo 'static const unsigned char fuzz_image_a32[] = {'; xxd -i < $$t/arm.bin; echo '};'; echo; \
	  echo 'static const unsigned char fuzz_image_t32[] = {'; xxd -i < $$t/thumb.bin; echo '};'; echo; \
	  echo '#endif'; } > fuzz/fuzz_image.h

# Coverage: the harnesses with fuzz/replay_main.c instead of libFuzzer,
# built with clang's source-based coverage, replaying every corpus.
FUZZ_COV_BIN := $(FUZZ_NAMES:%=$(B)/fuzz/cov/fuzz_%)
$(B)/fuzz/cov/fuzz_%: fuzz/fuzz_%.c fuzz/replay_main.c $(FUZZ_HDRS) $(LIB_SRC) include/csdec.h $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) -Isrc $(CSTD) $(WARN) -O1 -g -fprofile-instr-generate -fcoverage-mapping \
	  $(if $(FUZZ_TOOLS_$*),$(TOOL_CFLAGS),$(LIBDW_CFLAGS)) -o $@ $< fuzz/replay_main.c $(LIB_SRC) $(FUZZ_TOOLS_$*) \
	  $(if $(FUZZ_TOOLS_$*),$(TOOL_LDLIBS)) $(LIBDW_LDLIBS)

fuzz-coverage: $(FUZZ_COV_BIN) $(FUZZ_SEEDS)/.stamp
	@rm -f $(B)/fuzz/cov/*.profraw
	@set -e; for h in $(FUZZ_NAMES); do \
	  mkdir -p $(B)/fuzz/corpus/$$h; \
	  CSD_FUZZ_FLOW_COMPARE=off LLVM_PROFILE_FILE=$(B)/fuzz/cov/$$h.profraw $(B)/fuzz/cov/fuzz_$$h \
	    $(B)/fuzz/corpus/$$h $(FUZZ_SEEDS)/$$h fuzz/regress/$$h | sed "s/^/fuzz_$$h: /"; \
	done
	llvm-profdata merge -o $(B)/fuzz/cov/all.profdata $(B)/fuzz/cov/*.profraw
	llvm-cov report $(firstword $(FUZZ_COV_BIN)) $(addprefix -object ,$(wordlist 2,99,$(FUZZ_COV_BIN))) \
	  -instr-profile=$(B)/fuzz/cov/all.profdata $(LIB_SRC) $(sort tools/merge.c $(FUZZ_TOOLS_ALL) $(FUZZ_TOOLS_INCLUDED))
