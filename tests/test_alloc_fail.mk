# test_alloc_fail makes the library's allocations fail on demand:
# the references to csdi_zeroed_new and malloc in its objects go through
# the test's wrappers.
TEST_LDLIBS_test_alloc_fail := -Wl,--wrap=csdi_zeroed_new -Wl,--wrap=malloc
