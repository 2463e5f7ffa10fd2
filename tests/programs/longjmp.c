/* longjmp.c - non-local exits: setjmp/longjmp out of recursion of varying
 * depth, nested "try" levels where an inner handler rethrows to an outer
 * one, and a longjmp that unwinds through a libc frame (a qsort
 * comparator). longjmp returns through a register branch to a saved pc
 * that is not the instruction after any call. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf *handler;
static volatile int unwound;

__attribute__((noinline)) static void throw_error(int code)
{
	longjmp(*handler, code);
}

__attribute__((noinline)) static int descend(int depth, int fail_at)
{
	if (depth == fail_at)
		throw_error(100 + depth);
	if (depth == 0)
		return 0;
	unwound++;
	return 1 + descend(depth - 1, fail_at);
}

/* Runs descend() under its own handler; errors above 105 are passed on
 * to the caller's handler. */
static int try_descend(int depth, int fail_at)
{
	jmp_buf here, *outer = handler;
	volatile int result;
	int code;

	handler = &here;
	code = setjmp(here);
	if (code == 0) {
		result = descend(depth, fail_at);
	} else if (code > 105) {
		handler = outer;
		throw_error(code + 1000);
	} else {
		result = -code;
	}
	handler = outer;
	return result;
}

static int cmp_abort_on_seven(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	if (a == 7 || b == 7)
		throw_error(77);
	return a - b;
}

int main(void)
{
	jmp_buf top;
	volatile int round;
	int code;
	int values[12] = { 5, 3, 9, 1, 12, 4, 8, 2, 11, 6, 10, 7 };

	handler = &top;
	for (round = 0; round < 12; round++) {
		code = setjmp(top);
		if (code != 0) {
			printf("round %d: outer handler caught %d\n", round, code);
			continue;
		}
		printf("round %d: result %d\n", round, try_descend(10 + round, round % 4 == 3 ? -1 : round));
	}
	handler = &top;
	if ((code = setjmp(top)) == 0)
		qsort(values, 12, sizeof values[0], cmp_abort_on_seven);
	printf("qsort left by longjmp %d, %d frames unwound in total\n", code, unwound);
	return 0;
}
