TEST_LDLIBS_test_ocsd_diff := -lopencsd_c_api -lopencsd
