# test_profile runs the tool; its sanitizer build runs the sanitizer build of the tool.
$(B)/tests-san/test_profile: | $(B)/san-tool/csdec
