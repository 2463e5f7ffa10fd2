# test_accum compiles the tool's counting and ELF symbol code
# (tools/dynlib.c, slotmap.c, cov_accum.c, prof_accum.c, symbols.c) into itself.
$(B)/tests/test_accum $(B)/tests-san/test_accum: private CPPFLAGS += -Itools $(LIBDW_CFLAGS)
$(B)/tests/test_accum $(B)/tests-san/test_accum: $(wildcard tools/*.c) $(wildcard tools/*.h)
TEST_LDLIBS_test_accum := $(LIBDW_LDLIBS)
