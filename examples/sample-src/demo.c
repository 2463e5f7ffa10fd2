/*
 * demo.c - the program behind examples/sample: a freestanding ARM/Thumb
 * program (no libc, so its memory image is a few hundred bytes) with calls,
 * a loop, a switch, a function pointer, a Thumb/ARM interworking call and
 * system calls. Built and traced by `make sample`.
 */
typedef unsigned int u32;

static long sys_write(int fd, const void *buf, u32 len)
{
	register long r0 __asm__("r0") = fd;
	register long r1 __asm__("r1") = (long)buf;
	register long r2 __asm__("r2") = (long)len;
	register long r7 __asm__("r7") = 4; /* __NR_write */
	__asm__ volatile("svc #0" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r7) : "memory");
	return r0;
}

static void __attribute__((noreturn)) sys_exit(int code)
{
	register long r0 __asm__("r0") = code;
	register long r7 __asm__("r7") = 1; /* __NR_exit */
	__asm__ volatile("svc #0" : : "r"(r0), "r"(r7));
	for (;;)
		;
}

__attribute__((noinline, target("arm"))) u32 mix_arm(u32 x)
{
	return (x << 3) ^ (x >> 5) ^ 0x9e37u;
}

__attribute__((noinline)) static u32 classify(u32 v)
{
	switch (v & 7) {
	case 0: return v + 11;
	case 1: return v * 3;
	case 2: return v ^ 0x55;
	case 3: return v - 7;
	case 4: return v << 2;
	case 5: return v >> 1;
	case 6: return ~v;
	default: return v;
	}
}

__attribute__((noinline)) static u32 fib(u32 n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static u32 (*const ops[2])(u32) = { classify, mix_arm };

static void put_hex(u32 v)
{
	char s[11];
	s[0] = '0';
	s[1] = 'x';
	for (int i = 0; i < 8; i++) {
		u32 d = (v >> (28 - 4 * i)) & 15;
		s[2 + i] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
	}
	s[10] = '\n';
	sys_write(1, s, sizeof(s));
}

void __attribute__((noreturn)) _start(void)
{
	u32 acc = 1;
	for (u32 i = 0; i < 40; i++)
		acc = ops[i & 1](acc + i);
	acc += fib(10);
	put_hex(acc);
	sys_exit(0);
}
