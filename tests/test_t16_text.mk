# test_t16_text compiles tools/t16_text.c in and compares it with capstone.
TEST_LDLIBS_test_t16_text := -lcapstone
$(B)/tests/test_t16_text $(B)/tests-san/test_t16_text: tools/t16_text.c tools/t16_text.h
