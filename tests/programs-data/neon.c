/* neon.c - Advanced SIMD element and structure loads and stores for the
 * data-trace round trip (tests/test_data_roundtrip.c): VLD1-VLD4 and
 * VST1-VST4 of multiple structures (one to four registers, every element
 * size, every second register), of one lane and to all lanes, without
 * writeback, with writeback (!) and post-indexed by a register. Built
 * -marm and -mthumb, bare metal (start.S enables the FPU and Advanced SIMD
 * through CPACR and FPEXC). */
#include <stdint.h>

uint8_t src[256] __attribute__((aligned(16)));
uint8_t dst[256] __attribute__((aligned(16)));

static void multiple(uint8_t *s, uint8_t *d)
{
	__asm__ volatile(".fpu neon\n\t"
			 "vld1.8 {d0}, [%0]\n\t"
			 "vld1.16 {d0-d1}, [%0]\n\t"
			 "vld1.32 {d0-d2}, [%0]\n\t"
			 "vld1.64 {d0-d3}, [%0:128]\n\t"
			 "vld2.8 {d4-d5}, [%0]\n\t"
			 "vld2.16 {d4, d6}, [%0]\n\t"
			 "vld2.32 {d4-d7}, [%0]\n\t"
			 "vld3.8 {d0-d2}, [%0]\n\t"
			 "vld3.16 {d0, d2, d4}, [%0]\n\t"
			 "vld4.32 {d0-d3}, [%0]\n\t"
			 "vld4.8 {d0, d2, d4, d6}, [%0]\n\t"
			 "vst1.8 {d0}, [%1]\n\t"
			 "vst1.32 {d0-d3}, [%1:64]\n\t"
			 "vst2.16 {d4-d5}, [%1]\n\t"
			 "vst3.32 {d0-d2}, [%1]\n\t"
			 "vst4.8 {d0-d3}, [%1]\n\t"
			 "vst4.16 {d0, d2, d4, d6}, [%1]\n\t"
			 : : "r"(s), "r"(d) : "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7");
}

static void lanes(uint8_t *s, uint8_t *d)
{
	__asm__ volatile(".fpu neon\n\t"
			 "vld1.8 {d0[3]}, [%0]\n\t"
			 "vld1.16 {d0[2]}, [%0]\n\t"
			 "vld1.32 {d1[1]}, [%0]\n\t"
			 "vld2.8 {d0[5], d1[5]}, [%0]\n\t"
			 "vld2.16 {d0[1], d2[1]}, [%0]\n\t"
			 "vld3.32 {d0[0], d1[0], d2[0]}, [%0]\n\t"
			 "vld4.16 {d0[3], d1[3], d2[3], d3[3]}, [%0]\n\t"
			 "vld4.32 {d0[1], d2[1], d4[1], d6[1]}, [%0]\n\t"
			 "vst1.8 {d0[7]}, [%1]\n\t"
			 "vst1.32 {d1[0]}, [%1]\n\t"
			 "vst2.32 {d0[1], d1[1]}, [%1]\n\t"
			 "vst3.8 {d0[2], d1[2], d2[2]}, [%1]\n\t"
			 "vst4.8 {d0[6], d1[6], d2[6], d3[6]}, [%1]\n\t"
			 : : "r"(s), "r"(d) : "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7");
}

static void all_lanes(uint8_t *s)
{
	__asm__ volatile(".fpu neon\n\t"
			 "vld1.8 {d0[]}, [%0]\n\t"
			 "vld1.16 {d0[], d1[]}, [%0]\n\t"
			 "vld1.32 {d2[]}, [%0]\n\t"
			 "vld2.8 {d0[], d1[]}, [%0]\n\t"
			 "vld2.32 {d0[], d2[]}, [%0]\n\t"
			 "vld3.16 {d0[], d1[], d2[]}, [%0]\n\t"
			 "vld4.8 {d0[], d1[], d2[], d3[]}, [%0]\n\t"
			 "vld4.32 {d0[], d1[], d2[], d3[]}, [%0:128]\n\t"
			 : : "r"(s) : "memory", "d0", "d1", "d2", "d3");
}

/* Writeback and register post-index: the base moves on. */
static void writeback(uint8_t *s, uint8_t *d)
{
	uint8_t *ps = s, *pd = d;
	uint32_t step = 24;
	__asm__ volatile(".fpu neon\n\t"
			 "vld1.8 {d0-d1}, [%0]!\n\t"
			 "vld2.16 {d2-d3}, [%0]!\n\t"
			 "vld1.32 {d4[1]}, [%0]!\n\t"
			 "vld3.8 {d0[], d1[], d2[]}, [%0]!\n\t"
			 "vld4.8 {d0-d3}, [%0], %2\n\t"
			 "vld1.16 {d5[2]}, [%0], %2\n\t"
			 "vst1.64 {d0-d1}, [%1]!\n\t"
			 "vst2.8 {d0[1], d1[1]}, [%1]!\n\t"
			 "vst3.16 {d0-d2}, [%1], %2\n\t"
			 "vst1.32 {d4[0]}, [%1], %2\n\t"
			 : "+r"(ps), "+r"(pd) : "r"(step) : "memory", "d0", "d1", "d2", "d3", "d4", "d5");
}

int main(void)
{
	for (int i = 0; i < 256; i++)
		src[i] = (uint8_t)(i * 37 + 11);
	for (int round = 0; round < 2; round++) {
		multiple(src + 16 * round, dst);
		lanes(src + 8 * round + 1, dst + 64);
		all_lanes(src + 4 * round);
		writeback(src + 32, dst + 128);
		src[round] ^= dst[round * 3 + 1];
	}
	return 0;
}
