# tools.mk - optional libraries of the csdec tool, found with pkg-config:
#   capstone  instruction mnemonics in the text listing
#   libdw     DWARF line info (file:line in listings, lcov coverage)
# Without them the tool still builds and works (no mnemonics / no lines).
# `make NO_CAPSTONE=1 NO_LIBDW=1` builds without them even when installed.
PKG_CONFIG ?= pkg-config

ifeq ($(NO_CAPSTONE),)
ifeq ($(shell $(PKG_CONFIG) --exists capstone 2>/dev/null && echo yes),yes)
# (Loaded when first needed, by its file name: tools/disasm.c.)
CAPSTONE_LIB := $(shell objdump -p $$($(PKG_CONFIG) --variable=libdir capstone)/libcapstone.so 2>/dev/null | \
		  sed -n 's/^ *SONAME *//p')
TOOL_CFLAGS += -DCSD_HAVE_CAPSTONE -DCSD_CAPSTONE_LIB='"$(or $(CAPSTONE_LIB),libcapstone.so)"' \
	       $(shell $(PKG_CONFIG) --cflags capstone)
TOOL_LDLIBS += -ldl
endif
endif

# (LIBDW_*: also for the tests and fuzz harnesses that compile tools/symbols.c.)
ifeq ($(NO_LIBDW),)
ifeq ($(shell $(PKG_CONFIG) --exists libdw 2>/dev/null && echo yes),yes)
LIBDW_CFLAGS := -DCSD_HAVE_LIBDW $(shell $(PKG_CONFIG) --cflags libdw)
LIBDW_LDLIBS := $(shell $(PKG_CONFIG) --libs libdw)
TOOL_CFLAGS += $(LIBDW_CFLAGS)
TOOL_LDLIBS += $(LIBDW_LDLIBS)
endif
endif

# The tool built with the sanitizers, for the tests that run it
# (tests/test_listing, test_coverage, test_profile under `make test-san`).
export CSD_TOOL_SAN := $(abspath $(B)/san-tool/csdec)
$(B)/san-tool/csdec: $(wildcard tools/*.c) $(wildcard tools/*.h) $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(CPPFLAGS) -Isrc $(CFLAGS) $(SAN) $(TOOL_CFLAGS) -o $@ $(wildcard tools/*.c) $(SAN_OBJ) $(TOOL_LDLIBS)
