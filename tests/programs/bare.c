/* bare.c - the smallest program: no libc, no start files. _start computes
 * a few Fibonacci numbers, prints them with write(2) and calls exit(2):
 * a few hundred instructions, every one of them in this file. Built with
 * -nostdlib -nostartfiles -ffreestanding. */

long raw_syscall3(long a, long b, long c, long nr);
void _start(void) __attribute__((noreturn));

/* raw_syscall3(a, b, c, nr): the system call nr with three arguments
 * (r7 holds the number; in Thumb code r7 is also GCC's frame pointer,
 * so this is assembly, not inline asm with a register variable). */
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

static unsigned fib(unsigned n)
{
	unsigned a = 0, b = 1;
	while (n--) {
		unsigned t = a + b;
		a = b;
		b = t;
	}
	return a;
}

/* decimal digits of v, written backwards ending at end; returns the start */
static char *put_decimal(unsigned v, char *end)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

void _start(void)
{
	char line[64];
	char *p = line + sizeof line;

	*--p = '\n';
	for (unsigned n = 20; n >= 10; n -= 5) {
		p = put_decimal(fib(n), p);
		*--p = ' ';
	}
	raw_syscall3(1, (long)(p + 1), line + sizeof line - (p + 1), SYS_WRITE);
	raw_syscall3(0, 0, 0, SYS_EXIT);
	for (;;)
		;
}
