TEST_LDLIBS_test_ocsd_packets := -lopencsd_c_api -lopencsd
