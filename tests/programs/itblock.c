/* itblock.c - conditional execution. In Thumb, IT blocks of every length
 * and then/else pattern, with a conditional branch, a conditional call
 * (BLX register) and a conditional return (POP pc) as the last
 * instruction of a block; in ARM, the same source assembles to
 * conditionally executed ARM instructions (the assembler accepts IT in
 * ARM state and emits nothing for it). Plus C code with ?: and min/max
 * that GCC turns into IT blocks or conditional instructions at -O2. */
#include <stdio.h>

unsigned cond_mix(unsigned a, unsigned b);
unsigned cond_call(unsigned a, unsigned (*fn)(unsigned));

/* cond_mix(a, b): folds the results of many conditions into one value. */
__asm__(
	"	.text\n"
	"	.syntax unified\n"
#ifdef __thumb__
	"	.thumb\n"
	"	.thumb_func\n"
#else
	"	.arm\n"
#endif
	"	.global cond_mix\n"
	"	.type cond_mix, %function\n"
	"	.p2align 2\n"
	"cond_mix:\n"
	"	push	{r4, lr}\n"
	"	mov	r4, #0\n"
	"	cmp	r0, r1\n"
	"	ite	hi\n"                      /* then/else */
	"	addhi	r4, r4, #1\n"
	"	addls	r4, r4, #2\n"
	"	tst	r0, #1\n"
	"	itet	ne\n"                     /* then/else/then */
	"	addne	r4, r4, #4\n"
	"	subeq	r4, r4, #1\n"
	"	eorne	r4, r4, #8\n"
	"	cmp	r1, #0\n"
	"	itttt	eq\n"                     /* four thens */
	"	addeq	r4, r4, #16\n"
	"	addeq	r4, r4, #32\n"
	"	lsleq	r4, r4, #1\n"
	"	moveq	r1, #3\n"
	"	cmp	r0, r1\n"
	"	iteee	cs\n"                     /* then and three elses */
	"	addcs	r4, r4, r0\n"
	"	addcc	r4, r4, r1\n"
	"	lslcc	r4, r4, #1\n"
	"	subcc	r4, r4, #5\n"
	"	cmp	r0, #200\n"
	"	itt	gt\n"                       /* conditional return */
	"	movgt	r0, r4\n"
	"	popgt	{r4, pc}\n"
	"	cmp	r0, #50\n"
	"	it	lt\n"                        /* conditional branch */
	"	blt	1f\n"
	"	add	r4, r4, #64\n"
	"1:	cmp	r1, #7\n"
	"	ittet	le\n"                     /* mixed, ends in a then */
	"	addle	r4, r4, #128\n"
	"	addle	r4, r4, #1\n"
	"	subgt	r4, r4, #3\n"
	"	eorle	r4, r4, #0x100\n"
	"	mov	r0, r4\n"
	"	pop	{r4, pc}\n"
	"	.size cond_mix, . - cond_mix\n"
);

/* cond_call(a, fn): calls fn(a) only when a is odd, through a conditional
 * BLX register, and returns fn's result or a + 1000. */
__asm__(
	"	.text\n"
	"	.syntax unified\n"
#ifdef __thumb__
	"	.thumb\n"
	"	.thumb_func\n"
#else
	"	.arm\n"
#endif
	"	.global cond_call\n"
	"	.type cond_call, %function\n"
	"	.p2align 2\n"
	"cond_call:\n"
	"	push	{r4, lr}\n"
	"	mov	r4, r0\n"
	"	add	r0, r0, #1000\n"
	"	tst	r4, #1\n"
	"	itt	ne\n"
	"	movne	r0, r4\n"
	"	blxne	r1\n"
	"	pop	{r4, pc}\n"
	"	.size cond_call, . - cond_call\n"
);

static unsigned triple(unsigned x)
{
	return 3 * x;
}

__attribute__((noinline)) static int clamp(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

__attribute__((noinline)) static int sign_abs_max(int a, int b)
{
	int sign = (a > 0) - (a < 0);
	int abs_b = b < 0 ? -b : b;
	int max = a > abs_b ? a : abs_b;
	return sign * 1000 + max;
}

__attribute__((noinline)) static unsigned count_if(const int *v, int n)
{
	unsigned even = 0, big = 0;
	for (int i = 0; i < n; i++) {
		if ((v[i] & 1) == 0)
			even++;
		if (v[i] > 50)
			big += 2;
		else
			big ^= 1;
	}
	return even << 8 | big;
}

int main(void)
{
	static const unsigned pairs[][2] = {
		{ 0, 0 }, { 1, 0 }, { 2, 9 }, { 9, 2 }, { 3, 3 }, { 60, 7 }, { 49, 8 }, { 250, 1 },
		{ 201, 300 }, { 7, 7 }, { 100, 0 }, { 51, 6 },
	};
	int values[32];
	unsigned acc = 0;

	for (unsigned i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		unsigned r = cond_mix(pairs[i][0], pairs[i][1]);
		printf("cond_mix(%u, %u) = %u\n", pairs[i][0], pairs[i][1], r);
	}
	for (unsigned i = 0; i < 20; i++)
		acc = acc * 7 + cond_call(i, triple);
	printf("cond_call: %u\n", acc);
	for (int i = 0; i < 32; i++)
		values[i] = clamp(i * 13 - 100, -20, 200) + sign_abs_max(i - 16, 40 - 3 * i);
	printf("count_if: %x\n", count_if(values, 32));
	return 0;
}
