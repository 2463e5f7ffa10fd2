# test_flow_reuse runs decoders on threads.
TEST_LDLIBS_test_flow_reuse = -pthread
