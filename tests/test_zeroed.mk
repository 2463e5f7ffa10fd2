# test_zeroed makes and frees tables on two threads at once.
TEST_LDLIBS_test_zeroed := -pthread
