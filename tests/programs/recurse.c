/* recurse.c - deep recursion and returns: a recursive-descent expression
 * evaluator, mutual recursion a few thousand frames deep, Ackermann's
 * function, a recursive permutation count, and exit() called from deep
 * inside a recursion with atexit handlers pending (the program never
 * returns from main). Returns are POP/LDM with pc and BX lr. */
#include <stdio.h>
#include <stdlib.h>

static const char *input;

static long expr(void);

static long number(void)
{
	long v = 0;
	while (*input >= '0' && *input <= '9')
		v = v * 10 + (*input++ - '0');
	return v;
}

static long factor(void)
{
	if (*input == '(') {
		long v;
		input++;
		v = expr();
		if (*input == ')')
			input++;
		return v;
	}
	if (*input == '-') {
		input++;
		return -factor();
	}
	return number();
}

static long term(void)
{
	long v = factor();
	while (*input == '*' || *input == '/' || *input == '%') {
		char op = *input++;
		long r = factor();
		if (op == '*')
			v *= r;
		else if (r == 0)
			v = 0;
		else if (op == '/')
			v /= r;
		else
			v %= r;
	}
	return v;
}

static long expr(void)
{
	long v = term();
	while (*input == '+' || *input == '-') {
		char op = *input++;
		long r = term();
		v = op == '+' ? v + r : v - r;
	}
	return v;
}

/* noinline and the side effect keep GCC from turning these into loops */
static volatile int depth_seen;
__attribute__((noinline)) static int is_odd(int n);

__attribute__((noinline)) static int is_even(int n)
{
	if (n > depth_seen)
		depth_seen = n;
	return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) static int is_odd(int n)
{
	return n == 0 ? 0 : is_even(n - 1) + 0 * depth_seen;
}

__attribute__((noinline)) static unsigned ackermann(unsigned m, unsigned n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ackermann(m - 1, 1);
	return ackermann(m - 1, ackermann(m, n - 1));
}

/* permutations of n items with no item in its own place (derangements) */
__attribute__((noinline)) static int derange(int *used, int n, int pos)
{
	int count = 0;
	if (pos == n)
		return 1;
	for (int i = 0; i < n; i++) {
		if (used[i] || i == pos)
			continue;
		used[i] = 1;
		count += derange(used, n, pos + 1);
		used[i] = 0;
	}
	return count;
}

static void bye_first(void) { puts("atexit: registered first, runs last"); }
static void bye_second(void) { puts("atexit: registered second, runs first"); }

__attribute__((noinline)) static void dive(int n)
{
	if (n == 0) {
		printf("exit from depth %d\n", 50);
		exit(0);
	}
	if (n > 0)
		dive(n - 1);
	puts("never reached");
}

int main(void)
{
	static const char *const exprs[] = {
		"1+2*3", "(4+5)*(6-7)", "-(3*(2+(1+(8/2))))%5", "((((((((1+1)*2)+1)*2)+1)*2)+1)*2)",
		"100/7/2-3*-4",
	};
	int used[6] = { 0 };

	atexit(bye_first);
	atexit(bye_second);
	for (unsigned i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
		input = exprs[i];
		printf("%s = %ld\n", exprs[i], expr());
	}
	printf("is_even(2001) = %d, depth %d\n", is_even(2001), depth_seen);
	printf("ackermann(2, 3) = %u\n", ackermann(2, 3));
	printf("derangements of 5 = %d\n", derange(used, 5, 0));
	dive(50);
	return 1;
}
