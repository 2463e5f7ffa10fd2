# bench.mk - `make bench`: csdec against Debian's libopencsd on the same
# inputs, runs alternating in one process tree (bench/bench_run.c), and the
# memory check on a 1 GB trace. Results and how to read them: BENCHMARKS.md.
#
#   make bench              every input below, BENCH_ROUNDS rounds each; then
#                           the --jobs row (bench/jobs_scaling.sh: the whole
#                           tool, --jobs 1 against 2, in $(B)/bench/jobs.md);
#                           then the instruction counts (bench-instr)
#   make bench-mem          a 1 GB trace (TC2 repeated, made in $(B)/bench and
#                           deleted afterwards) must decode within
#                           BENCH_MEM_LIMIT_MB of peak RSS beyond the image
#   make bench-tool         only the whole-process table: `csdec decode
#                           --format none` against OpenCSD's flow decode as a
#                           process (ocsd_bench flow) and trc_pkt_lister
#                           -decode_only, on the single TC2 capture and on
#                           TC2 x200 (BENCH_WHOLE)
#   make bench-jobs         only the --jobs rows
#   make bench-callgrind    instruction counts (valgrind --tool=callgrind) of
#                           csdec's packet and flow decoding of the TC2 input
#   make bench-instr        instructions of the decode loops, csdec against
#                           OpenCSD, on smaller inputs (BENCH_INSTR_DIRS; the
#                           table in $(B)/bench/instr.md): figures that do not
#                           depend on the host (bench/instr_counts.sh)
#   make bench-bins         just the harnesses
#   BENCH_THP=off           bench and bench-loops with every run made without
#                           transparent huge pages (bench_run --no-thp)
#
# Inputs (snapshot directories):
#   BENCH_TC2_MB   TC2's capture (all four sources) repeated to this many MiB
#   BENCH_GEN_DIRS generated snapshots, one per protocol, at least
#                  BENCH_GEN_MB MiB of trace each: `csdec gen --repeat` over
#                  the recorded run of test program BENCH_PROG (tests/programs.mk)
#   kgen-*         optional (add to BENCH_GEN_DIRS): the generator over TC2's
#                  DS-5 instruction lists, i.e. real kernel code (bench/bench_gen.c)
#   BENCH_HOSTILE_MB  MiB of the hostile input: PTM branch packets into 16 MiB
#                  of zeros, each a walk to the end of the image (bench/bench_hostile.c)

BENCH_DIR := $(B)/bench
BENCH_ROUNDS ?= 3
BENCH_THP ?=
BENCH_THP_ARG := $(if $(filter off,$(BENCH_THP)),--no-thp)
# (32: csdec decodes it in about 0.12 s of CPU; at 8 MiB, 0.03 s, a single
# stolen time slice of the VM moved a round's ratio by a third.)
BENCH_TC2_MB ?= 32
BENCH_GEN_MB ?= 56
BENCH_MEM_LIMIT_MB ?= 32
BENCH_TC2 := $(BENCH_DIR)/tc2-$(BENCH_TC2_MB)mb
BENCH_PROG ?= switch-thumb-O2
BENCH_GEN_DIRS ?= $(BENCH_DIR)/gen-ptm-$(BENCH_GEN_MB)mb $(BENCH_DIR)/gen-etm3-$(BENCH_GEN_MB)mb
# The --jobs rows (bench/jobs_scaling.sh) also take one source of about
# 30 MiB: PTM without timestamps, return stack or cycle counts, whose every
# chunk can join the one before it by a matching state.
BENCH_JOBS_PTM := $(BENCH_DIR)/gen-ptmplain-30mb
# ... the same in formatter frames (its bytes come with an offset each) ...
BENCH_JOBS_PTMFMT := $(BENCH_DIR)/gen-ptmfmt-30mb
# ... and a perf.data file of two such sources (two CPUs' trace IDs in one
# per-thread buffer of formatter frames, as `csdec gen --perf-data` writes).
BENCH_JOBS_PERF := $(BENCH_DIR)/perf-ptmplain2-30mb.data
# ... and one of one such source, in AUX buffers of 64 KiB (perf's when the
# sink is drained often): its pieces decode at once.
BENCH_JOBS_PERF1 := $(BENCH_DIR)/perf-ptmfmt-30mb.data
# ... and the same source all in one AUX buffer (perf's snapshot mode, or
# a large buffer drained seldom): its trace is cut into chunks.
BENCH_JOBS_PERFW := $(BENCH_DIR)/perf-ptmwhole-30mb.data
BENCH_HOSTILE_MB ?= 8
BENCH_HOSTILE := $(BENCH_DIR)/hostile-walk-$(BENCH_HOSTILE_MB)mb
# Whole processes (bench_run --whole): TC2's 32 KB capture as recorded, and
# its buffer 200 times over, against ocsd_bench's flow decode as a whole
# process and, where installed (Debian package libopencsd-bin), OpenCSD's
# own tool trc_pkt_lister (BENCH_LISTER; empty: that column left out).
BENCH_TC2_X200 := $(BENCH_DIR)/tc2-200x
BENCH_WHOLE := tc2=$(SHARED)/traces/TC2 tc2-x200=$(BENCH_TC2_X200)
BENCH_OCSD_VERSION := $(shell $(PKG_CONFIG) --modversion libopencsd 2>/dev/null)
BENCH_LISTER ?= $(shell command -v trc_pkt_lister 2>/dev/null)
# bench-instr: each input at BENCH_INSTR_MB MiB (OpenCSD's flow decode of a
# MiB runs about 3 G instructions, a minute under callgrind).
BENCH_INSTR_MB ?= 4
BENCH_INSTR_DIRS := $(BENCH_DIR)/tc2-$(BENCH_INSTR_MB)mb $(BENCH_DIR)/gen-ptm-$(BENCH_INSTR_MB)mb \
	$(BENCH_DIR)/gen-etm3-$(BENCH_INSTR_MB)mb
BENCH_BINS := $(BENCH_DIR)/csdec_bench $(BENCH_DIR)/ocsd_bench $(BENCH_DIR)/bench_run $(BENCH_DIR)/bench_gen \
	      $(BENCH_DIR)/bench_hostile
BENCH_OCSD_LIBS := -lopencsd_c_api -lopencsd

.PHONY: bench bench-bins bench-mem bench-callgrind bench-inputs bench-tool bench-jobs bench-instr bench-loops

$(BENCH_DIR)/csdec_bench: bench/csdec_bench.c bench/bench_common.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Isrc $(CFLAGS) -o $@ $< $(LIB_OBJ)
$(BENCH_DIR)/ocsd_bench: bench/ocsd_bench.c bench/bench_common.h tests/ocsd_feed.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Isrc $(CFLAGS) -o $@ $< $(LIB_OBJ) $(BENCH_OCSD_LIBS)
$(BENCH_DIR)/bench_run: bench/bench_run.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $<
$(BENCH_DIR)/bench_gen: bench/bench_gen.c $(LIB_OBJ) tests/ds5_dump.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Isrc -Itests $(CFLAGS) -o $@ $< $(LIB_OBJ)

$(BENCH_DIR)/bench_hostile: bench/bench_hostile.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Isrc $(CFLAGS) -o $@ $< $(LIB_OBJ)

bench-bins: $(BENCH_BINS)

# TC2 repeated: the buffer file is concatenated copies of the real one (its
# size is a multiple of the 16-byte frame), every other file a symlink.
$(BENCH_DIR)/tc2-%mb/.stamp: bench/repeat_snapshot.sh
	@mkdir -p $(BENCH_DIR)
	sh bench/repeat_snapshot.sh $(SHARED)/traces/TC2 $(@D) $*
	@touch $@
$(BENCH_DIR)/tc2-%x/.stamp: bench/repeat_snapshot.sh
	@mkdir -p $(BENCH_DIR)
	sh bench/repeat_snapshot.sh $(SHARED)/traces/TC2 $(@D) $*x
	@touch $@

# Generated inputs: a test program's run replayed by `csdec gen --repeat`
# (gen-ptm-56mb: protocol ptm, 56 MiB).
$(BENCH_DIR)/gen-%mb/.stamp: $(PROG_DIR)/$(BENCH_PROG).log bench/gen_program.sh | $(B)/csdec
	@mkdir -p $(BENCH_DIR)
	sh bench/gen_program.sh $(B)/csdec $(PROG_DIR)/$(BENCH_PROG) $(word 1,$(subst -, ,$*)) \
	  $(word 2,$(subst -, ,$*)) $(@D)
	@touch $@

$(BENCH_DIR)/perf-%mb.data: $(PROG_DIR)/$(BENCH_PROG).log bench/gen_program.sh | $(B)/csdec
	@mkdir -p $(BENCH_DIR)
	sh bench/gen_program.sh $(B)/csdec $(PROG_DIR)/$(BENCH_PROG) $(word 1,$(subst -, ,$*)) \
	  $(word 2,$(subst -, ,$*)) $@

# Real kernel code: the generator over TC2's DS-5 instruction lists, repeated
# (kgen-ptm-56mb); see bench/bench_gen.c.
$(BENCH_DIR)/kgen-%mb/.stamp: $(BENCH_DIR)/bench_gen
	$(BENCH_DIR)/bench_gen $(word 1,$(subst -, ,$*)) $(word 2,$(subst -, ,$*)) $(SHARED)/traces/TC2 $(@D)
	@touch $@

# Hostile: every packet a walk through 16 MiB of zeros (bench/bench_hostile.c).
$(BENCH_DIR)/hostile-walk-%mb/.stamp: $(BENCH_DIR)/bench_hostile
	$(BENCH_DIR)/bench_hostile $* $(@D)
	@touch $@

bench-inputs: $(BENCH_TC2)/.stamp $(BENCH_GEN_DIRS:%=%/.stamp) $(BENCH_HOSTILE)/.stamp $(BENCH_TC2_X200)/.stamp \
	      $(BENCH_JOBS_PTM)/.stamp $(BENCH_JOBS_PTMFMT)/.stamp $(BENCH_JOBS_PERF) $(BENCH_JOBS_PERF1) \
	      $(BENCH_JOBS_PERFW)

# --jobs 1 against --jobs 2, whole tool, wall time: several sources (TC2;
# printed: TC2 x200 in JSON Lines and as the text listing, whose records
# the workers print and the merge interleaves), one source in chunks (PTM,
# ~30 MiB; printed and not, its packets printed; unformatted and in
# formatter frames), and one
# whose chunks mostly join by decoding again (timestamps and return stack).
BENCH_JOBS_ROWS = tc2=$(BENCH_TC2):none tc2-x200=$(BENCH_TC2_X200):jsonl tc2-x200=$(BENCH_TC2_X200):text \
	ptm-30mb=$(BENCH_JOBS_PTM):none ptm-30mb=$(BENCH_JOBS_PTM):jsonl ptm-30mb=$(BENCH_JOBS_PTM):packets/jsonl \
	ptmfmt-30mb=$(BENCH_JOBS_PTMFMT):none ptmfmt-30mb=$(BENCH_JOBS_PTMFMT):text \
	$(notdir $(word 1,$(BENCH_GEN_DIRS)))=$(word 1,$(BENCH_GEN_DIRS)):none \
	perf-2ptm-30mb=$(BENCH_JOBS_PERF):none perf-2ptm-30mb=$(BENCH_JOBS_PERF):jsonl \
	perf-1ptm-30mb=$(BENCH_JOBS_PERF1):none perf-1ptm-30mb=$(BENCH_JOBS_PERF1):jsonl \
	perf-1ptm-1aux-30mb=$(BENCH_JOBS_PERFW):none perf-1ptm-1aux-30mb=$(BENCH_JOBS_PERFW):jsonl

# The --jobs table and the instruction counts, as make bench and their own
# targets run them.
BENCH_JOBS_RUN = sh bench/jobs_scaling.sh $(B)/csdec $(BENCH_ROUNDS) $(BENCH_JOBS_ROWS) | tee $(BENCH_DIR)/jobs.md
BENCH_INSTR_RUN = sh bench/instr_counts.sh $(BENCH_DIR) $(foreach d,$(BENCH_INSTR_DIRS),$(notdir $(d))=$(d)) \
	| tee $(BENCH_DIR)/instr.md

BENCH_WHOLE_ARGS = $(foreach w,$(BENCH_WHOLE),--whole $(w)) --ocsd-version '$(BENCH_OCSD_VERSION)' \
	$(if $(BENCH_LISTER),--lister $(BENCH_LISTER))

bench: $(BENCH_BINS) $(B)/csdec bench-inputs $(BENCH_INSTR_DIRS:%=%/.stamp)
	$(BENCH_DIR)/bench_run --rounds $(BENCH_ROUNDS) --bin $(BENCH_DIR) --tool $(B)/csdec $(BENCH_THP_ARG) \
	  --md $(BENCH_DIR)/results.md --hostile $(notdir $(BENCH_HOSTILE))=$(BENCH_HOSTILE) tc2=$(BENCH_TC2) \
	  $(foreach d,$(BENCH_GEN_DIRS),$(notdir $(d))=$(d)) $(BENCH_WHOLE_ARGS)
	$(BENCH_JOBS_RUN)
	$(BENCH_INSTR_RUN)

# Only the library loops against OpenCSD, with the host probe (the first two
# tables of make bench): the quick check of issue 5's targets after a change.
bench-loops: $(BENCH_BINS) bench-inputs
	$(BENCH_DIR)/bench_run --rounds $(BENCH_ROUNDS) --bin $(BENCH_DIR) --tool $(B)/csdec $(BENCH_THP_ARG) \
	  --md $(BENCH_DIR)/results-loops.md tc2=$(BENCH_TC2) $(foreach d,$(BENCH_GEN_DIRS),$(notdir $(d))=$(d))

bench-instr: $(BENCH_BINS) $(BENCH_INSTR_DIRS:%=%/.stamp)
	$(BENCH_INSTR_RUN)

bench-jobs: $(B)/csdec $(BENCH_TC2)/.stamp $(BENCH_TC2_X200)/.stamp $(BENCH_JOBS_PTM)/.stamp $(BENCH_JOBS_PTMFMT)/.stamp \
	    $(word 1,$(BENCH_GEN_DIRS))/.stamp \
	    $(BENCH_JOBS_PERF) $(BENCH_JOBS_PERF1) $(BENCH_JOBS_PERFW)
	$(BENCH_JOBS_RUN)

bench-tool: $(BENCH_BINS) $(B)/csdec $(BENCH_TC2_X200)/.stamp
	$(BENCH_DIR)/bench_run --rounds $(BENCH_ROUNDS) --bin $(BENCH_DIR) --tool $(B)/csdec \
	  --md $(BENCH_DIR)/results-tool.md $(BENCH_WHOLE_ARGS)

bench-mem: $(BENCH_DIR)/csdec_bench $(BENCH_DIR)/bench_run $(B)/csdec
	@rm -rf $(BENCH_DIR)/tc2-1024mb
	sh bench/repeat_snapshot.sh $(SHARED)/traces/TC2 $(BENCH_DIR)/tc2-1024mb 1024
	$(BENCH_DIR)/bench_run --mem-check $(BENCH_MEM_LIMIT_MB) --bin $(BENCH_DIR) --tool $(B)/csdec \
	  tc2-1gb=$(BENCH_DIR)/tc2-1024mb; \
	  rc=$$?; rm -rf $(BENCH_DIR)/tc2-1024mb; exit $$rc

bench-callgrind: $(BENCH_DIR)/csdec_bench $(BENCH_TC2)/.stamp
	@for m in packets flow; do \
	  valgrind --tool=callgrind --callgrind-out-file=$(BENCH_DIR)/callgrind.$$m.out \
	    $(BENCH_DIR)/csdec_bench $$m $(BENCH_TC2) 2>&1 | grep -E 'RESULT|Collected'; \
	  callgrind_annotate $(BENCH_DIR)/callgrind.$$m.out 2>/dev/null | sed -n '1,40p' \
	    > $(BENCH_DIR)/callgrind.$$m.txt; \
	  echo "  top functions: $(BENCH_DIR)/callgrind.$$m.txt"; \
	done
