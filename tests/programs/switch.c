/* switch.c - dense switch statements that GCC compiles to jump tables:
 * TBB (targets near the table) and TBH (targets far away) in Thumb, and
 * LDR pc tables in ARM (this program is built -fno-pie; the other
 * programs keep Debian's default PIE code, where ARM tables are ADD pc).
 * A small bytecode interpreter runs its dispatch switch a few thousand
 * times. Every case does different work, so GCC cannot replace a switch
 * by a lookup of constants. */
#include <stdio.h>

static unsigned acc;

__attribute__((noinline)) static void mix(unsigned v)
{
	acc = acc * 33u + v;
}

/* Short cases: all targets lie within TBB reach. */
__attribute__((noinline)) static void small_switch(int op)
{
	switch (op) {
	case 0: mix(1); break;
	case 1: acc ^= 0x5a5au; break;
	case 2: mix(acc >> 3); break;
	case 3: acc += 77u; break;
	case 4: mix((unsigned)op * 5u); break;
	case 5: acc = (acc << 7) | (acc >> 25); break;
	case 6: mix(6); mix(7); break;
	case 7: acc -= 1000u; break;
	case 8: mix(acc & 0xffu); break;
	case 9: acc = ~acc; break;
	default: mix(0xdeadu); break;
	}
}

/* 64 cases of a dozen bytes each: the far targets need TBH. */
#define BIG_CASE(n) case n: mix((unsigned)(n) * 2654435761u); acc += (n) ^ (acc >> ((n) % 13)); break;
#define BIG_CASES8(b) BIG_CASE(b) BIG_CASE(b + 1) BIG_CASE(b + 2) BIG_CASE(b + 3) \
	BIG_CASE(b + 4) BIG_CASE(b + 5) BIG_CASE(b + 6) BIG_CASE(b + 7)

__attribute__((noinline)) static void big_switch(int op)
{
	switch (op) {
	BIG_CASES8(0) BIG_CASES8(8) BIG_CASES8(16) BIG_CASES8(24)
	BIG_CASES8(32) BIG_CASES8(40) BIG_CASES8(48) BIG_CASES8(56)
	default: acc = 0; break;
	}
}

/* Bytecode of a tiny stack machine. */
enum op {
	OP_PUSH, OP_ADD, OP_SUB, OP_MUL, OP_DUP, OP_SWAP, OP_OVER, OP_DROP,
	OP_JNZ, OP_JMP, OP_PRINT, OP_HALT, OP_ROT, OP_MOD, OP_INC, OP_DEC,
};

/* sum of i*i mod 7 for i = 40..1, printing the running sum whenever
 * i % 8 == 0; the numbers on the left are code indices (jump targets). */
static const int program[] = {
	/*  0 */ OP_PUSH, 0,                  /* sum */
	/*  2 */ OP_PUSH, 40,                 /* sum i */
	/*  4 */ OP_DUP, OP_DUP, OP_MUL,      /* sum i i*i */
	/*  7 */ OP_PUSH, 7, OP_MOD,          /* sum i i*i%7 */
	/* 10 */ OP_ROT, OP_ADD, OP_SWAP,     /* sum' i */
	/* 13 */ OP_DUP, OP_PUSH, 8, OP_MOD,  /* sum' i i%8 */
	/* 17 */ OP_JNZ, 21,
	/* 19 */ OP_OVER, OP_PRINT,
	/* 21 */ OP_DEC,
	/* 22 */ OP_DUP, OP_JNZ, 4,
	/* 25 */ OP_DROP, OP_PRINT, OP_HALT,
};

static int run(const int *code, int len)
{
	int stack[32];
	int sp = 0, pc = 0, steps = 0, t;

	for (;;) {
		/* bounds keep a bad program from running away */
		if (++steps > 5000 || sp < 0 || sp > 29 || pc < 0 || pc >= len)
			return -1;
		switch ((enum op)code[pc++]) {
		case OP_PUSH: stack[sp++] = code[pc++]; break;
		case OP_ADD: sp--; stack[sp - 1] += stack[sp]; break;
		case OP_SUB: sp--; stack[sp - 1] -= stack[sp]; break;
		case OP_MUL: sp--; stack[sp - 1] *= stack[sp]; break;
		case OP_DUP: stack[sp] = stack[sp - 1]; sp++; break;
		case OP_SWAP: t = stack[sp - 1]; stack[sp - 1] = stack[sp - 2]; stack[sp - 2] = t; break;
		case OP_OVER: stack[sp] = stack[sp - 2]; sp++; break;
		case OP_DROP: sp--; break;
		case OP_JNZ: sp--; if (stack[sp]) pc = code[pc]; else pc++; break;
		case OP_JMP: pc = code[pc]; break;
		case OP_PRINT: sp--; printf("vm: %d\n", stack[sp]); break;
		case OP_HALT: return steps;
		case OP_ROT: t = stack[sp - 3]; stack[sp - 3] = stack[sp - 2];
			stack[sp - 2] = stack[sp - 1]; stack[sp - 1] = t; break;
		case OP_MOD: sp--; stack[sp - 1] %= stack[sp]; break;
		case OP_INC: stack[sp - 1]++; break;
		case OP_DEC: stack[sp - 1]--; break;
		default: return -2;
		}
	}
}

int main(void)
{
	for (int i = 0; i < 300; i++) {
		small_switch(i % 12);
		big_switch((i * 7) % 67);
	}
	printf("switch acc %08x\n", acc);
	printf("vm steps %d\n", run(program, (int)(sizeof program / sizeof program[0])));
	return 0;
}
