# test_progress compiles tools/progress.c in: rebuild it when that changes.
$(B)/tests/test_progress $(B)/tests-san/test_progress: tools/progress.c tools/progress.h
