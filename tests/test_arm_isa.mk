TEST_LDLIBS_test_arm_isa := -lcapstone
