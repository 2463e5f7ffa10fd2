# roundtrip.mk - the round-trip matrix of issue 4: every recorded test
# program run (tests/programs.mk) turned into snapshots by `csdec gen` under
# every trace configuration (tests/gen-snapshots.sh), for
# tests/test_roundtrip.c (decode == the run) and tests/test_ocsd_diff.c
# (csdec == OpenCSD, every difference explained).

GEN_SNAP_DIR := $(B)/gen-snapshots
export CSD_GEN_SNAPSHOTS := $(abspath $(GEN_SNAP_DIR))

$(GEN_SNAP_DIR)/.done: $(B)/csdec tests/gen-snapshots.sh $(PROG_LOGS)
	sh tests/gen-snapshots.sh $(B)/csdec $(PROG_DIR) $(GEN_SNAP_DIR)
	touch $@

.PHONY: gen-snapshots
gen-snapshots: $(GEN_SNAP_DIR)/.done

test-plain test-san: $(GEN_SNAP_DIR)/.done
