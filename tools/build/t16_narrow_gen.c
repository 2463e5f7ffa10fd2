/*
 * t16_narrow_gen.c - run at build time: writes the table by which the
 * listing decides where a 32-bit T32 instruction is written with ".w"
 * (tools/disasm.c: has_narrow), so that no run builds it.
 *
 * For every 16-bit T32 encoding that decodes (IT aside), the hash of its
 * text as t16_text() writes it at address 0x1000 (t16_text_hash) and the
 * encoding, sorted by hash, then encoding: a lookup finds the encodings of
 * a text's hash by binary search and compares their texts, written again,
 * with the text itself, so a shared hash costs a comparison, never a wrong
 * answer.
 *
 *   t16_narrow_gen OUT    writes OUT (a C fragment, included by disasm.c)
 */
#include <stdio.h>
#include <stdlib.h>

#include "t16_text.h"

struct entry {
	uint32_t hash;
	uint16_t hw;
};

static int by_hash(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->hw > y->hw) - (x->hw < y->hw);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: t16_narrow_gen OUT\n");
		return 2;
	}
	static struct entry e[0x10000];
	size_t n = 0;
	/* (0xE800 and up: the first halfword of a 32-bit encoding; 0xBFxy
	 * with y != 0: IT, never written here.) */
	for (uint32_t hw = 0; hw < 0xE800u; hw++) {
		if ((hw & 0xFF00u) == 0xBF00u && (hw & 0xFu) != 0)
			continue;
		char mn[32], ops[160];
		if (!t16_text((uint16_t)hw, 0x1000, mn, sizeof(mn), ops, sizeof(ops)))
			continue;
		e[n].hash = t16_text_hash(mn, ops);
		e[n++].hw = (uint16_t)hw;
	}
	qsort(e, n, sizeof(e[0]), by_hash);
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "/* Written by tools/build/t16_narrow_gen.c: the 16-bit T32 texts' hashes, sorted, and their encodings. */\n");
	fprintf(f, "#define T16_NARROW_COUNT %zu\n", n);
	fprintf(f, "static const uint32_t t16_narrow_hash[T16_NARROW_COUNT] = {\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%08x,%s", (unsigned)e[i].hash, i % 8 == 7 ? "\n" : "");
	fprintf(f, "};\nstatic const uint16_t t16_narrow_hw[T16_NARROW_COUNT] = {\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%04x,%s", (unsigned)e[i].hw, i % 12 == 11 ? "\n" : "");
	fprintf(f, "};\n");
	if (fclose(f) != 0) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
