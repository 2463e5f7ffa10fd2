# programs.mk - the Linux test programs (tests/programs/*.c, described in
# tests/programs/README.md), cross-compiled for ARM and Thumb at -O0 and
# -O2, and their runs recorded by qemu-user instruction by instruction
# (what the log says: docs/qemu-log.md; reader: tools/qemu_log.c).
#
#   make programs        every program, log and output:
#     build/programs/<name>-<arm|thumb>-<O0|O2>      static ELF
#     build/programs/<name>-<arm|thumb>-<O0|O2>.o    its object (codegen check)
#     build/programs/<name>-<arm|thumb>-<O0|O2>.log  qemu -d exec log
#     build/programs/<name>-<arm|thumb>-<O0|O2>.out  the program's stdout
#     build/programs/<name>-<arm|thumb>-<O0|O2>.mem  a second run's data
#                        accesses (our TCG plugin, tests/qemu_memlog.c) ...
#     build/programs/<name>-<arm|thumb>-<O0|O2>.mexec  ... and its -d exec log
#   make programs-check  also proves with objdump that the compiler emitted
#                        what each program is there for (tables, IT, veneers)
#
# Built and run by `make test` for the round-trip tests (roundtrip.mk makes
# test-plain and test-san depend on the snapshots generated from them; 36
# runs, a few seconds); tests/test_qemu_log.c compiles and runs its own tiny
# programs besides.

PROG_CC   ?= arm-linux-gnueabihf-gcc
PROG_QEMU ?= qemu-arm
PROG_DIR  := $(B)/programs
PROG_NAMES    := $(sort $(basename $(notdir $(wildcard tests/programs/*.c))))
PROG_VARIANTS := arm-O0 arm-O2 thumb-O0 thumb-O2
PROG_ELFS := $(foreach n,$(PROG_NAMES),$(foreach v,$(PROG_VARIANTS),$(PROG_DIR)/$(n)-$(v)))
PROG_LOGS := $(PROG_ELFS:=.log)
PROG_MEMS := $(PROG_ELFS:=.mem)
PROG_PLUGIN := $(PROG_DIR)/qemu_memlog.so

export CSD_PROGRAMS := $(abspath $(PROG_DIR))

# -g for addr2line; warnings only (a newer compiler must not break the build).
PROG_CFLAGS := -g -Wall -Wextra
PROG_LDFLAGS := -static
# switch.c: LDR pc jump tables in ARM need non-PIC code (Debian's default
# PIE code gives ADD pc tables, which the other programs have).
PROG_CFLAGS_switch := -fno-pie
# bare*.c: no libc, no start files, no libgcc: every executed instruction
# is in the source file.
PROG_CFLAGS_bare := -ffreestanding -fno-stack-protector
PROG_LDFLAGS_bare := -nostdlib -nostartfiles
PROG_CFLAGS_bare_mix := $(PROG_CFLAGS_bare)
PROG_LDFLAGS_bare_mix := $(PROG_LDFLAGS_bare)

# qemu 8.1 renamed -singlestep to -one-insn-per-tb.
PROG_ONE_INSN = $(shell $(PROG_QEMU) -h 2>/dev/null | grep -q one-insn-per-tb \
	&& echo -one-insn-per-tb || echo -singlestep)
# A run takes well under a second; the limits only stop a broken program
# from filling the disk (ulimit -f counts 512-byte blocks in dash: 200 MB).
PROG_TIMEOUT := 60
PROG_MAX_LOG_BLOCKS := 400000

.PHONY: programs programs-check

programs: $(PROG_LOGS) $(PROG_MEMS)

# One compile rule and one link rule per instruction set and optimisation
# level; $* is the program name.
define PROG_VARIANT_RULES
$(PROG_DIR)/%-$(1)-$(2).o: tests/programs/%.c tests/programs.mk
	@mkdir -p $$(dir $$@)
	@command -v $$(PROG_CC) >/dev/null || { echo "$$(PROG_CC) missing: run scripts/install-deps" >&2; exit 1; }
	$$(PROG_CC) -m$(1) -$(2) $$(PROG_CFLAGS) $$(PROG_CFLAGS_$$*) -c -o $$@ $$<
$(PROG_DIR)/%-$(1)-$(2): $(PROG_DIR)/%-$(1)-$(2).o
	$$(PROG_CC) -m$(1) $$(PROG_LDFLAGS) $$(PROG_LDFLAGS_$$*) -o $$@ $$<
endef
$(foreach isa,arm thumb,$(foreach opt,O0 O2,$(eval $(call PROG_VARIANT_RULES,$(isa),$(opt)))))

# The run: an empty environment and a fixed argv[0], because libc start-up
# walks both (their sizes change the instruction count); the ELF's path
# still shifts the initial stack (docs/qemu-log.md), so logs are
# reproducible for one build directory. Temporary names first, so a failed
# run leaves no log behind.
$(PROG_DIR)/%.log: $(PROG_DIR)/%
	@command -v $(PROG_QEMU) >/dev/null || { echo "$(PROG_QEMU) missing: run scripts/install-deps" >&2; exit 1; }
	@rm -f $@ $(PROG_DIR)/$*.out
	cd $(PROG_DIR) && ulimit -f $(PROG_MAX_LOG_BLOCKS) && \
	  timeout $(PROG_TIMEOUT) env -i "$$(command -v $(PROG_QEMU))" -0 $* $(PROG_ONE_INSN) \
	    -d exec,nochain -D $*.log.tmp ./$* </dev/null >$*.out.tmp \
	  || { echo "$(PROG_QEMU) run of $< failed" >&2; rm -f $*.log.tmp $*.out.tmp; exit 1; }
	mv $(PROG_DIR)/$*.out.tmp $(PROG_DIR)/$*.out
	mv $(PROG_DIR)/$*.log.tmp $@

# The data accesses (tests/test_qemu_data.c): the .log run again (same
# directory, argv[0], environment and stdout to a file, whose block size
# glibc's stdio goes by; the same output) with our plugin loaded, which
# writes the accesses of each instruction, and -d exec again, which gives
# each instruction's instruction set (the plugin cannot read the CPSR).
# The plugin is built for the host, with the project's warnings.
$(PROG_PLUGIN): tests/qemu_memlog.c tests/programs.mk
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	  -Wmissing-prototypes -O2 -fPIC -shared -fvisibility=hidden -o $@ $<
# Whether qemu-arm loads the plugin: "ok", or the reason it refused it
# (a qemu built without plugin support, or another plugin API version),
# which the .mem files then carry for the test to report as a skip.
$(PROG_DIR)/memlog.probe: $(PROG_PLUGIN) $(PROG_DIR)/bare-arm-O0
	@rm -f $@
	cd $(PROG_DIR) && if timeout $(PROG_TIMEOUT) env -i "$$(command -v $(PROG_QEMU))" \
	    -plugin $(abspath $(PROG_PLUGIN)),out=/dev/null ./bare-arm-O0 </dev/null >/dev/null 2>memlog.probe.err; \
	  then echo ok > memlog.probe.tmp; \
	  else echo "# $(PROG_QEMU) refused the plugin: $$(head -n 1 memlog.probe.err)" > memlog.probe.tmp; fi; \
	  rm -f memlog.probe.err
	mv $(PROG_DIR)/memlog.probe.tmp $@
$(PROG_DIR)/%.mem: $(PROG_DIR)/% $(PROG_DIR)/%.log $(PROG_DIR)/memlog.probe
	@rm -f $@ $(PROG_DIR)/$*.mexec
	if [ "$$(cat $(PROG_DIR)/memlog.probe)" != ok ]; then cp $(PROG_DIR)/memlog.probe $@; exit 0; fi; \
	cd $(PROG_DIR) && ulimit -f $(PROG_MAX_LOG_BLOCKS) && \
	  timeout $(PROG_TIMEOUT) env -i "$$(command -v $(PROG_QEMU))" -0 $* $(PROG_ONE_INSN) \
	    -d exec,nochain -D $*.mexec.tmp -plugin $(abspath $(PROG_PLUGIN)),out=$*.mem.tmp ./$* </dev/null >$*.mout.tmp \
	  && cmp -s $*.mout.tmp $*.out \
	  || { echo "$(PROG_QEMU) run of $< with the plugin failed" >&2; rm -f $*.mexec.tmp $*.mem.tmp $*.mout.tmp; exit 1; }; \
	rm $*.mout.tmp && mv $*.mexec.tmp $*.mexec && mv $*.mem.tmp $*.mem

test-plain test-san: $(PROG_MEMS)

programs-check: $(PROG_LOGS) $(PROG_ELFS:=.o)
	sh tests/programs/check_codegen.sh $(PROG_DIR)

# tests/test_qemu_log.c compiles the reader in.
$(B)/tests/test_qemu_log $(B)/tests-san/test_qemu_log: tools/qemu_log.c tools/qemu_log.h
