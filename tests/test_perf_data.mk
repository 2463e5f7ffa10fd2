# test_perf_data runs the tool; its sanitizer build (make test-san) runs
# the sanitizer build of the tool, built first.
test-san: $(B)/san-tool/csdec
