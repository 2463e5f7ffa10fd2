# test_listing runs the tool; its sanitizer build runs the sanitizer build of the tool.
$(B)/tests-san/test_listing: | $(B)/san-tool/csdec
