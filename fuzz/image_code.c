/*
 * image_code.c - source of the fixed code image built into the flow-decoder
 * fuzz harnesses (fuzz/fuzz_image.h). Compiled once for A32 and once for T32
 * with arm-linux-gnueabihf-gcc (see `make fuzz-image`), so the harnesses walk
 * real compiler output: direct and indirect branches, calls and returns,
 * loops, jump tables, conditional execution and IT blocks, SVC.
 * Nothing here is run; only the instruction bytes matter.
 */
typedef unsigned int u32;

volatile u32 sink;

__attribute__((noinline)) static u32 leaf(u32 a, u32 b)
{
	return a > b ? a - b : b - a;
}

__attribute__((noinline)) static u32 loop_sum(const u32 *p, u32 n)
{
	u32 s = 0;
	for (u32 i = 0; i < n; i++)
		s += p[i] & 1 ? p[i] : leaf(p[i], s);
	return s;
}

__attribute__((noinline)) static u32 table(u32 k, u32 v)
{
	switch (k) {
	case 0: return v + 1;
	case 1: return v * 3;
	case 2: return v ^ 0x55;
	case 3: return leaf(v, 7);
	case 4: return v >> 2;
	case 5: return v << 5;
	case 6: return ~v;
	default: return 0;
	}
}

typedef u32 (*fn_t)(u32, u32);
static const fn_t fns[2] = { leaf, table };

__attribute__((noinline)) static u32 indirect(u32 k, u32 a, u32 b)
{
	return fns[k & 1](a, b);
}

__attribute__((noinline)) static void syscall0(u32 n)
{
	register u32 r7 __asm__("r7") = n;
	__asm__ volatile("svc 0" : : "r"(r7) : "memory");
}

__attribute__((noinline)) static u32 barriers(u32 v)
{
	__asm__ volatile("dmb" ::: "memory");
	sink = v;
	__asm__ volatile("dsb" ::: "memory");
	__asm__ volatile("isb" ::: "memory");
	return sink;
}

u32 entry(u32 a, u32 b, const u32 *p);
u32 entry(u32 a, u32 b, const u32 *p)
{
	u32 s = 0;
	while (a--) {
		s += loop_sum(p, b & 15);
		s += table(s & 7, a);
		s += indirect(s, a, b);
		if (s & 0x100)
			syscall0(s & 0xFF);
		s = barriers(s);
	}
	return s;
}
