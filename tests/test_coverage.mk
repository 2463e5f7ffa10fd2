# test_coverage runs the tool; its sanitizer build runs the sanitizer build of the tool.
$(B)/tests-san/test_coverage: | $(B)/san-tool/csdec
