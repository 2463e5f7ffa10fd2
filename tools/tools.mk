# tools.mk - optional libraries of the csdec tool, found with pkg-config:
#   capstone  instruction mnemonics in the text listing
#   libdw     DWARF line info (file:line in listings, lcov coverage)
# Both are loaded with dlopen when first needed (tools/dynlib.c), not
# linked: the build needs their headers, a run only the libraries it uses.
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
CAPSTONE_LDLIBS := -ldl
TOOL_LDLIBS += $(CAPSTONE_LDLIBS)
# The table of 16-bit T32 texts by which the listing writes ".w", made at
# build time (tools/build/t16_narrow_gen.c), included by tools/disasm.c:
# every build of that file with capstone depends on it.
T16_NARROW := $(B)/gen/t16_narrow.inc
TOOL_CFLAGS += -I$(B)/gen
$(T16_NARROW): tools/build/t16_narrow_gen.c tools/t16_text.c tools/t16_text.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itools $(CFLAGS) -o $(B)/gen/t16_narrow_gen tools/build/t16_narrow_gen.c tools/t16_text.c
	$(B)/gen/t16_narrow_gen $@.tmp && mv $@.tmp $@
$(B)/csdec $(B)/san-tool/csdec $(B)/fuzz/fuzz_print $(B)/fuzz/cov/fuzz_print \
  $(B)/tests/test_fuzz_regress $(B)/tests-san/test_fuzz_regress: $(T16_NARROW)
endif
endif

ifeq ($(NO_LIBDW),)
ifeq ($(shell $(PKG_CONFIG) --exists libdw 2>/dev/null && echo yes),yes)
# (Loaded when an ELF file with DWARF is first read, by its file name: tools/symbols.c.)
LIBDW_LIB := $(shell objdump -p $$($(PKG_CONFIG) --variable=libdir libdw)/libdw.so 2>/dev/null | \
	       sed -n 's/^ *SONAME *//p')
LIBDW_CFLAGS := -DCSD_HAVE_LIBDW -DCSD_LIBDW_LIB='"$(or $(LIBDW_LIB),libdw.so)"' $(shell $(PKG_CONFIG) --cflags libdw)
TOOL_CFLAGS += $(LIBDW_CFLAGS)
TOOL_LDLIBS += $(filter-out $(CAPSTONE_LDLIBS),-ldl)
# The tests, fuzz harnesses and sanitizer build that compile tools/symbols.c
# link libdw as well (its dlopen then finds it loaded): LeakSanitizer
# misreads the thread-local storage of a library loaded with dlopen and
# crashes at exit (intercept_tls_get_addr).
LIBDW_LDLIBS := -ldl -Wl,--push-state,--no-as-needed $(shell $(PKG_CONFIG) --libs libdw) -Wl,--pop-state
endif
endif

# The tool built with the sanitizers, for the tests that run it
# (tests/test_listing, test_coverage, test_profile under `make test-san`).
export CSD_TOOL_SAN := $(abspath $(B)/san-tool/csdec)
$(B)/san-tool/csdec: $(wildcard tools/*.c) $(wildcard tools/*.h) $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(CPPFLAGS) -Isrc $(CFLAGS) $(SAN) $(TOOL_CFLAGS) -o $@ $(wildcard tools/*.c) $(SAN_OBJ) $(TOOL_LDLIBS) \
	  $(LIBDW_LDLIBS)
