# test_timeline runs the tool; its sanitizer build runs the sanitizer build of the tool.
test-san: $(B)/san-tool/csdec
