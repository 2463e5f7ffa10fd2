/* interwork.c - switches between ARM and Thumb state in both directions
 * whichever way the file is compiled: functions forced to one instruction
 * set with __attribute__((target("arm"))) / target("thumb") call each
 * other directly (BL turned into BLX by the linker), through pointers
 * (BLX register), by tail call (B through a linker veneer), return with
 * BX lr and POP {pc}, are called back from libc (qsort), and longjmp
 * from one state to a setjmp made in the other. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#define ARM_CODE __attribute__((target("arm"), noinline))
#define THUMB_CODE __attribute__((target("thumb"), noinline))

static jmp_buf arm_env;
static volatile unsigned trail;

THUMB_CODE static unsigned t_square(unsigned x);
ARM_CODE static unsigned a_twice(unsigned x);

ARM_CODE static unsigned a_add3(unsigned x)
{
	trail = trail * 3 + 1;
	return x + 3;
}

THUMB_CODE static unsigned t_add5(unsigned x)
{
	trail = trail * 5 + 2;
	return x + 5;
}

/* Thumb calling ARM directly, then returning what ARM returns */
THUMB_CODE static unsigned t_calls_a(unsigned x)
{
	unsigned y = a_add3(x);
	return a_twice(y) + t_square(y & 7);
}

/* ARM calling Thumb directly */
ARM_CODE static unsigned a_calls_t(unsigned x)
{
	unsigned y = t_add5(x);
	return t_square(y & 15) + y;
}

ARM_CODE static unsigned a_twice(unsigned x)
{
	return 2 * x;
}

THUMB_CODE static unsigned t_square(unsigned x)
{
	return x * x;
}

/* tail calls into the other state: at -O2 these become plain branches
 * that the linker routes through a state-changing veneer */
ARM_CODE unsigned a_tail_to_t(unsigned x);
THUMB_CODE unsigned t_tail_to_a(unsigned x);

ARM_CODE unsigned a_tail_to_t(unsigned x)
{
	if (x > 1000)
		return x;
	return t_tail_to_a(x * 2 + 1);
}

THUMB_CODE unsigned t_tail_to_a(unsigned x)
{
	if (x > 1000)
		return x;
	return a_tail_to_t(x * 3 + 1);
}

typedef unsigned (*step_fn)(unsigned);

/* a pointer table mixing both states, called from both states */
static step_fn volatile steps[] = { a_add3, t_add5, t_calls_a, a_calls_t, a_twice, t_square };

ARM_CODE static unsigned a_run_table(unsigned x, int n)
{
	for (int i = 0; i < n; i++)
		x = steps[i % 6](x) & 0xffff;
	return x;
}

THUMB_CODE static unsigned t_run_table(unsigned x, int n)
{
	for (int i = n; i > 0; i--)
		x = steps[i % 6](x) & 0xffff;
	return x;
}

/* qsort (libc, Thumb) calls back into ARM code */
ARM_CODE static int a_compare(const void *x, const void *y)
{
	unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
	return (a > b) - (a < b);
}

THUMB_CODE static void t_jump_back(int value)
{
	longjmp(arm_env, value);
}

ARM_CODE static int a_try(int value)
{
	int got = setjmp(arm_env);
	if (got == 0)
		t_jump_back(value);
	return got;
}

int main(void)
{
	unsigned v[16];

	printf("direct: %u %u\n", t_calls_a(7), a_calls_t(9));
	printf("tail: %u %u\n", a_tail_to_t(1), t_tail_to_a(2));
	printf("tables: %u %u\n", a_run_table(1, 30), t_run_table(2, 30));
	for (int i = 0; i < 16; i++)
		v[i] = (unsigned)(i * 11 + 5) % 17;
	qsort(v, 16, sizeof v[0], a_compare);
	printf("sorted: %u %u %u\n", v[0], v[8], v[15]);
	printf("longjmp: %d %d\n", a_try(5), a_try(9));
	printf("trail: %u\n", trail);
	return 0;
}
