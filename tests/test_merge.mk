# test_merge compiles tools/merge.c in (with the checks of
# fuzz/merge_check.h) and runs the tool; its sanitizer build (make
# test-san) runs the sanitizer build of the tool, built first.
$(B)/tests/test_merge $(B)/tests-san/test_merge: tools/merge.c tools/merge.h tools/cli.h fuzz/merge_check.h
test-san: $(B)/san-tool/csdec
