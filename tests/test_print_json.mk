# test_print_json compiles the tool's printers (tools/print.c, with the
# disassembler and symbol code it calls) into itself.
$(B)/tests/test_print_json $(B)/tests-san/test_print_json: private CPPFLAGS += -Itools $(LIBDW_CFLAGS)
$(B)/tests/test_print_json $(B)/tests-san/test_print_json: tools/print.c tools/disasm.c tools/t16_text.c tools/symbols.c tools/dynlib.c \
	$(wildcard tools/*.h)
TEST_LDLIBS_test_print_json := tools/disasm.c tools/t16_text.c tools/symbols.c tools/dynlib.c $(LIBDW_CFLAGS) $(LIBDW_LDLIBS) -ldl
