# programs-m.mk - the Cortex-M test program (tests/programs-m/) and its run
# recorded by qemu-system-arm, instruction by instruction (facts about the
# log: docs/cortex-m.md).
#
#   build/programs-m/cm3demo.elf   the program (Cortex-M3, Thumb-2)
#   build/programs-m/cm3demo.log   qemu's log: every executed instruction
#                                  and every exception entry / return
#   build/programs-m/cm3demo.out   the program's own output (semihosting)
#
# `make test` needs them (tests/test_programs_m.c checks the log's shape), so
# a missing cross compiler or qemu-system-arm fails the test run; both come
# from scripts/install-deps.

PM_CC   ?= arm-linux-gnueabihf-gcc
PM_QEMU ?= qemu-system-arm
PM_DIR  := $(B)/programs-m
PM_SRC  := tests/programs-m/cm3demo.c tests/programs-m/it_blocks.S
PM_LD   := tests/programs-m/cm3.ld
# The Linux cross compiler is fine for bare metal: soft-float ABI (the
# M3 has no FPU), no PIE, no stack protector, no libc.
PM_CFLAGS := -mcpu=cortex-m3 -mthumb -mfloat-abi=soft -O2 -g -ffreestanding \
	-fno-pie -fno-stack-protector -Wall -Wextra -Werror
PM_LDFLAGS := -nostdlib -static -no-pie -T $(PM_LD) -Wl,--build-id=none
# -icount makes virtual time advance per instruction (2^7 ns each), so
# SysTick fires at the same instructions on every run: the log is
# deterministic. One instruction per translation block and no chaining make
# qemu log each instruction as it runs; `int` adds exception entries and
# returns with their numbers. qemu 8.1 renamed -singlestep.
PM_ICOUNT := 7
PM_ONE_INSN = $(shell $(PM_QEMU) -help 2>/dev/null | grep -q one-insn-per-tb \
	&& echo '-accel tcg,one-insn-per-tb=on' || echo -singlestep)
PM_TIMEOUT := 60

export CSD_PROGRAMS_M := $(abspath $(PM_DIR))

.PHONY: programs-m

programs-m: $(PM_DIR)/cm3demo.log $(PM_DIR)/cm3demo.out

$(PM_DIR)/cm3demo.elf: $(PM_SRC) $(PM_LD) tests/programs-m.mk
	@mkdir -p $(dir $@)
	@command -v $(PM_CC) >/dev/null || { echo "$(PM_CC) missing: run scripts/install-deps" >&2; exit 1; }
	$(PM_CC) $(PM_CFLAGS) $(PM_LDFLAGS) -o $@ $(PM_SRC)

# The program ends itself through semihosting SYS_EXIT (exit status 0 when
# it saw nothing unexpected); the timeout only guards against a broken
# build. Semihosting output (qemu 7.2 sends it to stderr by default) goes to
# its own file; qemu's own messages to .err. Output goes to temporary names
# first so a failed run leaves no target behind.
$(PM_DIR)/%.log $(PM_DIR)/%.out: $(PM_DIR)/%.elf
	@command -v $(PM_QEMU) >/dev/null || { echo "$(PM_QEMU) missing: run scripts/install-deps" >&2; exit 1; }
	@rm -f $(PM_DIR)/$*.log $(PM_DIR)/$*.out $(PM_DIR)/$*.log.tmp $(PM_DIR)/$*.out.tmp
	timeout $(PM_TIMEOUT) $(PM_QEMU) -M lm3s6965evb -nographic \
	  -chardev file,id=semihost,path=$(PM_DIR)/$*.out.tmp \
	  -semihosting-config enable=on,target=native,chardev=semihost \
	  -icount shift=$(PM_ICOUNT) $(PM_ONE_INSN) -d exec,nochain,int -D $(PM_DIR)/$*.log.tmp \
	  -kernel $< </dev/null >$(PM_DIR)/$*.err 2>&1 \
	  || { echo "$(PM_QEMU) run of $< failed:" >&2; cat $(PM_DIR)/$*.out.tmp $(PM_DIR)/$*.err >&2; exit 1; }
	mv $(PM_DIR)/$*.log.tmp $(PM_DIR)/$*.log
	mv $(PM_DIR)/$*.out.tmp $(PM_DIR)/$*.out

test-plain: $(PM_DIR)/cm3demo.log $(PM_DIR)/cm3demo.out
test-san: $(PM_DIR)/cm3demo.log $(PM_DIR)/cm3demo.out
