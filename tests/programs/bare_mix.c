/* bare_mix.c - a small program without libc (a few thousand instructions,
 * every one in this file) that still has every kind of branch: a switch
 * jump table, calls through function pointers, recursion, and calls that
 * change between ARM and Thumb state. Built like bare.c. */

long raw_syscall3(long a, long b, long c, long nr);
void _start(void) __attribute__((noreturn));

__asm__(
	"	.text\n"
	"	.syntax unified\n"
#ifdef __thumb__
	"	.thumb\n"
	"	.thumb_func\n"
#else
	"	.arm\n"
#endif
	"	.global raw_syscall3\n"
	"	.type raw_syscall3, %function\n"
	"	.p2align 2\n"
	"raw_syscall3:\n"
	"	push	{r7, lr}\n"
	"	mov	r7, r3\n"
	"	svc	#0\n"
	"	pop	{r7, pc}\n"
	"	.size raw_syscall3, . - raw_syscall3\n"
);

#define SYS_EXIT 1
#define SYS_WRITE 4

static volatile unsigned acc;

/* each case different, so the switch stays a table */
__attribute__((noinline)) static void dispatch(unsigned op)
{
	switch (op) {
	case 0: acc += 1; break;
	case 1: acc ^= 0x55u; break;
	case 2: acc = acc * 3u; break;
	case 3: acc -= 7u; break;
	case 4: acc = (acc << 3) | (acc >> 29); break;
	case 5: acc += op * op; break;
	case 6: acc = ~acc; break;
	case 7: acc >>= 1; break;
	case 8: acc |= 0x100u; break;
	default: acc = 0; break;
	}
}

__attribute__((target("arm"), noinline)) static unsigned arm_gcd(unsigned a, unsigned b)
{
	/* Euclid by subtraction: no division helper from libgcc */
	if (a == b)
		return a;
	return a > b ? arm_gcd(a - b, b) : arm_gcd(a, b - a);
}

__attribute__((target("thumb"), noinline)) static unsigned thumb_sum_tree(unsigned depth)
{
	return depth == 0 ? 1 : 1 + thumb_sum_tree(depth - 1) + thumb_sum_tree(depth - 1);
}

static unsigned add_one(unsigned x) { return x + 1; }
static unsigned halve(unsigned x) { return x / 2; }

static unsigned (*volatile const pointer_steps[])(unsigned) = { add_one, halve, add_one };

static char *put_hex(unsigned v, char *end)
{
	for (int i = 0; i < 8; i++, v >>= 4)
		*--end = "0123456789abcdef"[v & 15];
	return end;
}

void _start(void)
{
	char line[64];
	char *p = line + sizeof line;
	unsigned x = 1000;

	for (unsigned i = 0; i < 40; i++)
		dispatch((i * 7) % 10);
	for (unsigned i = 0; i < 9; i++)
		x = pointer_steps[i % 3](x);
	*--p = '\n';
	p = put_hex(acc, p);
	*--p = ' ';
	p = put_hex(x, p);
	*--p = ' ';
	p = put_hex(arm_gcd(1071u * 13u, 462u * 13u), p);
	*--p = ' ';
	p = put_hex(thumb_sum_tree(5), p);
	raw_syscall3(1, (long)p, line + sizeof line - p, SYS_WRITE);
	raw_syscall3(0, 0, 0, SYS_EXIT);
	for (;;)
		;
}
