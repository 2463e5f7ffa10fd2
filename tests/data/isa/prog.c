/* prog.c - cross-compiled (ARM and Thumb, -O0/-O2, static) by
 * tests/test_arm_isa.c to give the instruction classifier real compiler
 * and libc code: switch tables (TBB/TBH, ADD/LDR pc), direct and indirect
 * calls, returns, recursion, long jumps, floating point compares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf env;

static int dense_switch(int x)
{
	switch (x) {
	case 0: return 11;
	case 1: return 23;
	case 2: return 5;
	case 3: return 78;
	case 4: return x * 3;
	case 5: return 99;
	case 6: return -1;
	case 7: return 42;
	case 8: return 17;
	default: return 0;
	}
}

static int wide_switch(int x)
{
	switch (x) {
	case 0: puts("a"); return 1;
	case 1: puts("b"); return 2;
	case 2: return dense_switch(x + 1) * 7;
	case 3: return (int)strlen("hello world") + x;
	case 4: puts("e"); return 5;
	case 5: longjmp(env, 2);
	case 6: return dense_switch(x - 1) + dense_switch(x - 2);
	case 7: puts("h"); return 8;
	case 8: return x << 3;
	case 9: puts("j"); return 10;
	default: return -x;
	}
}

static long long mixed(long long a, long long b, double d)
{
	if (d > 1.5 && a != 0)
		return a / b + (long long)(d * 3.0);
	return a % (b | 1);
}

static int sum(int n, ...)
{
	va_list ap;
	int s = 0;
	va_start(ap, n);
	while (n-- > 0)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int (*volatile table[])(int) = { dense_switch, wide_switch, fib };

int main(int argc, char **argv)
{
	int acc = 0;
	if (setjmp(env))
		return 3;
	for (int i = 0; i < argc + 10; i++)
		acc += table[i % 3](i);
	acc += sum(4, 1, 2, 3, argc);
	acc += (int)mixed(argc * 1000LL, 7, argc * 0.75);
	if (argc > 1)
		acc += atoi(argv[1]);
	printf("%d\n", acc);
	return acc & 1;
}
