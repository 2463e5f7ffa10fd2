# csdec - CoreSight ETMv3 / PTM trace decoder.
#   make            library (static + shared) and the csdec tool in build/
#   make check      the unit tests that need only a C compiler, clang and
#                   ../shared, plain and under ASan/UBSan
#   make test       every test, plain and under ASan/UBSan
#   make CC=clang   same with clang

CC      ?= cc
AR      ?= ar
CSTD    := -std=c11
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
OPT     ?= -O2 -g
CPPFLAGS += -Iinclude -D_POSIX_C_SOURCE=200809L
# Functions start on cache lines: the hot loops' speed then depends on
# their own code only, not on how much code the linker put before them
# (one unrelated change moved the PTM flow loop and cost it 9 %).
ALIGN   := -falign-functions=64
CFLAGS  += $(CSTD) $(WARN) $(OPT) $(ALIGN)
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The sanitizer build uses clang when it is there, so `make test` also proves
# the sources compile warning-free with clang.
SAN_CC  ?= $(shell command -v clang >/dev/null 2>&1 && echo clang || echo $(CC))

SONAME_MAJOR := 0
VERSION      := 0.1.0

B       := build
LIB_SRC := $(sort $(wildcard src/*.c))
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
PIC_OBJ := $(LIB_SRC:src/%.c=$(B)/pic/%.o)
SAN_OBJ := $(LIB_SRC:src/%.c=$(B)/san/%.o)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TESTS    := $(TEST_SRC:tests/%.c=$(B)/tests/%)
SAN_TESTS := $(TEST_SRC:tests/%.c=$(B)/tests-san/%)

# ../shared holds the reference captures the golden tests read.
SHARED ?= $(abspath ../shared)
export CSD_SHARED := $(SHARED)
# The golden tests read them: without them, `make test` says so at once
# rather than failing deep inside the first test that opens one.
ifneq ($(filter test test-plain test-san check,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(SHARED)/traces),)
$(error the shared reference captures are missing: $(SHARED)/traces does not exist (clone them to ../shared, or set SHARED=DIR))
endif
endif
export CSD_TOOL := $(abspath $(B)/csdec)

.PHONY: all test test-plain test-san check clean
.SECONDARY:
all: $(B)/libcsdec.a $(B)/libcsdec.so $(B)/csdec

$(B)/obj/%.o: src/%.c include/csdec.h $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
$(B)/pic/%.o: src/%.c include/csdec.h $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<
$(B)/san/%.o: src/%.c include/csdec.h $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -c -o $@ $<

$(B)/libcsdec.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
# Only the public csd_* names are exported; internal cross-file helpers are csdi_*.
$(B)/libcsdec.so.$(VERSION): $(PIC_OBJ) src/libcsdec.map
	$(CC) -shared -Wl,-soname,libcsdec.so.$(SONAME_MAJOR) -Wl,--version-script=src/libcsdec.map -o $@ $(PIC_OBJ) -pthread
$(B)/libcsdec.so: $(B)/libcsdec.so.$(VERSION)
	ln -sf libcsdec.so.$(VERSION) $(B)/libcsdec.so.$(SONAME_MAJOR)
	ln -sf libcsdec.so.$(VERSION) $@

# The tool is tools/*.c; it may use the library's internal headers (the
# trace generator lives in the library so tests can drive it too).
# Optional extras of the tool (disassembler, DWARF) add to TOOL_CFLAGS /
# TOOL_LDLIBS in tools/*.mk.
-include $(wildcard tools/*.mk)
TOOL_SRC := $(sort $(wildcard tools/*.c))
$(B)/csdec: $(TOOL_SRC) $(wildcard tools/*.h) $(B)/libcsdec.a
	$(CC) $(CPPFLAGS) -Isrc $(CFLAGS) $(TOOL_CFLAGS) -o $@ $(TOOL_SRC) $(B)/libcsdec.a $(TOOL_LDLIBS)

# Unit tests: each tests/test_X.c is one program, linked with the library
# objects built from source (internal headers in src/ are visible).
# A test needing extra libraries sets TEST_LDLIBS_<name> in tests/<name>.mk;
# benchmarks and fuzzers bring their own rules in bench/*.mk, fuzz/*.mk.
-include $(sort $(wildcard tests/*.mk))
-include $(wildcard bench/*.mk)
-include $(wildcard fuzz/*.mk)
$(B)/tests/%: tests/%.c $(wildcard tests/*.h) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Isrc $(CFLAGS) -o $@ $< $(LIB_OBJ) $(TEST_LDLIBS_$*)
$(B)/tests-san/%: tests/%.c $(wildcard tests/*.h) $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(CPPFLAGS) -Isrc $(CFLAGS) $(SAN) -o $@ $< $(SAN_OBJ) $(TEST_LDLIBS_$*)

# Each test program's result goes to $(B)/test-results/{plain,san}. Under
# `make test` every program runs and the last line counts them all
# ("N passed, N failed"; the failed ones listed before it); `make test-plain`
# or `make test-san` alone stops at the first failure.
TEST_RESULTS := $(B)/test-results
TEST_ALL := $(if $(filter test check,$(MAKECMDGOALS)),1)
# $(1): programs, $(2): results file, $(3): environment to run them in.
define run_tests
	@mkdir -p $(TEST_RESULTS); : > $(TEST_RESULTS)/$(2); \
	for t in $(1); do echo "== $$t"; \
	  if $(3) $$t; then echo "pass $$t" >> $(TEST_RESULTS)/$(2); \
	  else echo "FAIL $$t" >> $(TEST_RESULTS)/$(2); [ -n "$(TEST_ALL)" ] || exit 1; fi; \
	done
endef

# $(1): results files; the failed programs, then one line "N passed, N failed".
define test_summary
	@cat $(1) | grep '^FAIL' || true
	@p=$$(cat $(1) | grep -c '^pass'); \
	 f=$$(cat $(1) | grep -c '^FAIL'); \
	 echo "$$p passed, $$f failed"; [ "$$f" -eq 0 ]
endef
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

test: test-layers test-plain test-san
	$(call test_summary,$(TEST_RESULTS)/plain $(TEST_RESULTS)/san)

test-plain: $(TESTS) $(B)/csdec
	$(call run_tests,$(TESTS),plain,)

test-san: $(SAN_TESTS)
	$(call run_tests,$(SAN_TESTS),san,$(SAN_ENV))

# `make check`: the unit tests that need nothing beyond a C compiler, clang
# and ../shared, plain and under ASan/UBSan; the quick loop while working.
# Left out are those needing more: the ARM cross compiler and qemu (the
# recorded programs, their generated snapshots, prog_trace.h's program),
# OpenCSD, Linux perf, Python, a browser. `make test` runs those too.
CHECK_NEEDS_MORE := arm_isa chunks cli_port coverage data_roundtrip frame listing ocsd_diff ocsd_packets \
	perf_compare perf_enc profile programs_m python qemu_data qemu_log roundtrip roundtrip_m roundtrip_perf \
	timeline tool_limits viewer
CHECK_NAMES := $(filter-out $(CHECK_NEEDS_MORE:%=test_%),$(TEST_SRC:tests/%.c=%))
check: $(CHECK_NAMES:%=$(B)/tests/%) $(CHECK_NAMES:%=$(B)/tests-san/%) all $(B)/san-tool/csdec
	$(call run_tests,$(CHECK_NAMES:%=$(B)/tests/%),check-plain,)
	$(call run_tests,$(CHECK_NAMES:%=$(B)/tests-san/%),check-san,$(SAN_ENV))
	$(call test_summary,$(TEST_RESULTS)/check-plain $(TEST_RESULTS)/check-san)

clean:
	rm -rf $(B)

# The sample capture README's first command decodes (examples/sample): the
# freestanding program examples/sample-src/demo.c run under qemu-arm and
# traced by csdec gen with a PTM and an ETMv3 (cycle-accurate, timestamps)
# in one ETB-style formatted buffer. Committed; `make sample` remakes it.
.PHONY: sample
sample: $(B)/csdec
	@mkdir -p $(B)/sample
	arm-linux-gnueabihf-gcc -O2 -mthumb -g -nostdlib -static -ffreestanding -fno-pie -no-pie \
	  -o $(B)/sample/demo examples/sample-src/demo.c
	cd $(B)/sample && env -i "$$(command -v qemu-arm)" -0 demo -singlestep -d exec,nochain -D demo.log ./demo >/dev/null
	rm -rf examples/sample
	$(B)/csdec gen --qemu-log $(B)/sample/demo.log --elf $(B)/sample/demo --protocol ptm --protocol etm3 \
	  --cycle-accurate --timestamps --formatted --sync-period 512 -o examples/sample
	cp $(B)/sample/demo examples/sample/demo.elf
