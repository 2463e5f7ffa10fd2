/* mem.c - loads and stores of every kind for the data-trace round trip
 * (tests/test_data_roundtrip.c): LDR/STR of each width, sign-extending
 * loads, LDRD/STRD, LDM/STM/PUSH/POP, LDREX/STREX with a STREX that
 * fails, SWP (ARM only), VLDR/VSTR/VLDM/VSTM, loads and stores whose
 * condition fails, and a load of the PC. Built -marm and -mthumb,
 * bare metal (start.S). */
#include <stdint.h>

volatile uint8_t b8[16] = { 0x80, 0x7f, 0x01, 0xff, 0x00, 0x10 };
volatile uint16_t h16[8] = { 0x8001, 0x7ffe, 0x1234 };
volatile uint32_t w32[16] = { 0xdeadbeef, 0x00000000, 0x12345678, 0x000000aa, 0x00010000 };
volatile uint64_t d64[4] = { 0x0123456789abcdefull, 0xffffffff00000001ull };
volatile int8_t s8[4] = { -5, 7 };
volatile int16_t s16[4] = { -300, 300 };
uint32_t far_away[4] __attribute__((section(".far")));
uint32_t exclusive;
uint32_t out[64];
int32_t sink;

__attribute__((noinline)) static uint32_t sum(const uint32_t *p, int n)
{
	uint32_t s = 0;
	for (int i = 0; i < n; i++)
		s += p[i];
	return s;
}

__attribute__((noinline)) static uint32_t callee(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e)
{
	volatile uint32_t local[4] = { a, b, c, d };
	return local[0] + local[1] * e + local[2] + local[3];
}

static void widths(void)
{
	for (int i = 0; i < 6; i++) {
		out[i] = b8[i];           /* LDRB, STR */
		b8[8 + i] = (uint8_t)(b8[i] + 1);   /* STRB */
	}
	for (int i = 0; i < 3; i++) {
		out[8 + i] = h16[i];      /* LDRH */
		h16[4 + i] = (uint16_t)(h16[i] ^ 0x5555);    /* STRH */
	}
	sink = s8[0] + s8[1];         /* LDRSB */
	sink += s16[0] + s16[1];      /* LDRSH */
	out[12] = w32[0] + w32[2];
	far_away[1] = w32[4];         /* a data address far from the others */
	far_away[2] = w32[3];
}

static void doubles(void)
{
	__asm__ volatile("ldrd r2, r3, [%0]\n\t"
			 "eor r2, r2, #1\n\t"
			 "strd r2, r3, [%1]"
			 : : "r"(&d64[0]), "r"(&d64[2]) : "r2", "r3", "memory");
	d64[3] = d64[1] + 3;
}

static void multiple(void)
{
	__asm__ volatile("ldm %0, {r0, r1, r2, r3}\n\t"
			 "stmia %1, {r0, r1, r2, r3}"
			 : : "r"(&w32[0]), "r"(&out[20]) : "r0", "r1", "r2", "r3", "memory");
	out[24] = sum(out, 24);
	out[25] = callee(1, 2, 3, 4, 5);
}

static void exclusives(void)
{
	uint32_t v, fail;
	__asm__ volatile("ldrex %0, [%1]" : "=&r"(v) : "r"(&exclusive) : "memory");
	__asm__ volatile("strex %0, %1, [%2]" : "=&r"(fail) : "r"(v + 0x101), "r"(&exclusive) : "memory");
	out[30] = fail;
	/* No reservation after CLREX: this store-exclusive fails. */
	__asm__ volatile("clrex\n\tstrex %0, %1, [%2]" : "=&r"(fail) : "r"(0x5a5a5a5au), "r"(&exclusive) : "memory");
	out[31] = fail;
	uint8_t bv;
	__asm__ volatile("ldrexb %0, [%1]" : "=&r"(bv) : "r"(&b8[15]) : "memory");
	__asm__ volatile("strexb %0, %1, [%2]" : "=&r"(fail) : "r"((uint32_t)bv + 9), "r"(&b8[15]) : "memory");
	out[32] = fail;
}

static void conditional(int n)
{
	/* One load and one store that execute, one of each that fails. */
	__asm__ volatile("cmp %0, #0\n\t"
#if defined(__thumb__)
			 "ite ne\n\t"
#endif
			 "ldrne %0, [%1]\n\t"
			 "streq %0, [%1, #4]\n\t"
#if defined(__thumb__)
			 "ite eq\n\t"
#endif
			 "ldreq %0, [%1, #8]\n\t"
			 "strne %0, [%1, #12]\n\t"
			 : "+r"(n) : "r"(&out[40]) : "cc", "memory");
}

static void vfp(void)
{
	__asm__ volatile(".fpu vfpv3-d16\n\t"
			 "vldr d0, [%0]\n\t"
			 "vldr s4, [%1]\n\t"
			 "vstr d0, [%2]\n\t"
			 "vstr s4, [%2, #8]\n\t"
			 "vldmia %1, {s6-s9}\n\t"
			 "vstmia %2, {d3-d4}\n\t"
			 "vpush {d0-d1}\n\t"
			 "vpop {d0-d1}\n\t"
			 : : "r"(&d64[0]), "r"(&w32[0]), "r"(&out[48]) : "memory", "d0", "d1", "d2", "d3", "d4");
}

static void swap(void)
{
#if !defined(__thumb__)
	uint32_t old;
	__asm__ volatile(".arch armv6\n\tswp %0, %1, [%2]" : "=&r"(old) : "r"(0x77u), "r"(&w32[5]) : "memory");
	out[60] = old;
	__asm__ volatile(".arch armv6\n\tswpb %0, %1, [%2]" : "=&r"(old) : "r"(0x66u), "r"(&b8[6]) : "memory");
	out[61] = old;
#endif
}

static uint32_t target(void)
{
	return 0x42;
}

static uint32_t (*volatile fnptr)(void) = target;

int main(void)
{
	for (int round = 0; round < 3; round++) {
		widths();
		doubles();
		multiple();
		exclusives();
		conditional(round & 1);
		vfp();
		swap();
		out[62] += fnptr();       /* a load, then a call through it */
		w32[1] += (uint32_t)round;
	}
	return 0;
}
