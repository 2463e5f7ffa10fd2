TEST_LDLIBS_test_ocsd_diff := -lopencsd_c_api -lopencsd
# The differential test also compares every generated snapshot of the
# round-trip matrix (tests/roundtrip.mk builds them before test-plain and
# test-san); a CSD_DIFF_SNAPSHOTS from the environment wins.
export CSD_DIFF_SNAPSHOTS ?= $(CSD_GEN_SNAPSHOTS)
