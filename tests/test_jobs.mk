# test_jobs runs the tool; its sanitizer build runs the sanitizer build of
# the tool (threads and all), built first.
test-san: $(B)/san-tool/csdec
