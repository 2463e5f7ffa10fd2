# roundtrip_m.mk - the Cortex-M round trip: the recorded cm3demo run
# (tests/programs-m.mk) turned into ETMv3 trace by `csdec gen --core
# cortex-m3`, raw and as a TPIU-style formatted capture, for
# tests/test_roundtrip_m.c.

GEN_M_DIR := $(B)/gen-m
export CSD_GEN_M := $(abspath $(GEN_M_DIR))

$(GEN_M_DIR)/.done: $(B)/csdec $(PM_DIR)/cm3demo.log
	rm -rf $(GEN_M_DIR) && mkdir -p $(GEN_M_DIR)
	$(B)/csdec gen --qemu-log $(PM_DIR)/cm3demo.log --elf $(PM_DIR)/cm3demo.elf --core cortex-m3 \
	  --protocol etm3 -o $(GEN_M_DIR)/cm3demo--etm3 2>/dev/null
	$(B)/csdec gen --qemu-log $(PM_DIR)/cm3demo.log --elf $(PM_DIR)/cm3demo.elf --core cortex-m3 \
	  --protocol etm3 --cycle-accurate --formatted=port --sync-period 300 -o $(GEN_M_DIR)/cm3demo--etm3-ca-tpiu 2>/dev/null
	touch $@

test-plain test-san: $(GEN_M_DIR)/.done
