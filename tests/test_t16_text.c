/*
 * test_t16_text.c - tools/t16_text.c against capstone: every 16-bit T32
 * encoding (IT aside) gets the same mnemonic and operands, or is rejected
 * by both, at the address the listing uses and at others (branch
 * targets). The listing takes its ".w" decisions from these texts, and
 * uses t16_text() only with the capstone version checked here
 * (tools/disasm.c), so this is what makes them the same as capstone's.
 */
#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "../tools/t16_text.c"

int main(void)
{
	int major = 0, minor = 0;
	cs_version(&major, &minor);
	csh h;
	CHECK(cs_open(CS_ARCH_ARM, CS_MODE_THUMB, &h) == CS_ERR_OK);
	cs_option(h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_NOREGNAME);
	cs_insn *insn = cs_malloc(h);
	CHECK(insn != NULL);
	static const uint32_t addrs[] = { 0x1000, 0x0, 0x8000f00c, 0xfffffffe - 0x800 };
	unsigned long same = 0, differ = 0, rejected = 0;
	for (size_t ai = 0; ai < sizeof(addrs) / sizeof(addrs[0]); ai++) {
		for (uint32_t hw = 0; hw < 0x10000; hw++) {
			if ((hw & 0xFF00) == 0xBF00 && (hw & 0xF))
				continue;
			char mn[32], ops[160];
			const int ok = t16_text((uint16_t)hw, addrs[ai], mn, sizeof(mn), ops, sizeof(ops));
			if (hw >= 0xE800) {
				/* First halves of 32-bit encodings: never 16-bit texts. */
				CHECK(!ok && !mn[0] && !ops[0]);
				continue;
			}
			const uint8_t b[2] = { (uint8_t)hw, (uint8_t)(hw >> 8) };
			const uint8_t *code = b;
			size_t n = 2;
			uint64_t a = addrs[ai];
			const int cs_ok = cs_disasm_iter(h, &code, &n, &a, insn);
			if (!cs_ok)
				rejected++;
			if (ok != cs_ok || (ok && (strcmp(mn, insn->mnemonic) || strcmp(ops, insn->op_str)))) {
				if (differ++ < 20)
					fprintf(stderr, "%04x at 0x%x: capstone %s \"%s %s\", t16_text %s \"%s %s\"\n",
						(unsigned)hw, (unsigned)addrs[ai], cs_ok ? "decodes" : "rejects",
						cs_ok ? insn->mnemonic : "", cs_ok ? insn->op_str : "", ok ? "decodes" : "rejects",
						mn, ops);
			} else {
				same++;
			}
			if (!ok)
				CHECK(!mn[0] && !ops[0]);
		}
	}
	cs_free(insn, 1);
	cs_close(&h);
	printf("test_t16_text: capstone %d.%d, %lu texts the same (%lu encodings rejected by both), %lu differ\n",
	       major, minor, same, rejected, differ);
	/* t16_text() stands in for this version only; with another the
	 * listing asks capstone, and differences are only reported. */
	if (major == T16_CAPSTONE_MAJOR && minor == T16_CAPSTONE_MINOR) {
		CHECK(differ == 0);
		CHECK(same > 4 * 58000);
	} else {
		printf("test_t16_text: capstone %d.%d is not %d.%d: the listing does not use t16_text() with it\n", major,
		       minor, T16_CAPSTONE_MAJOR, T16_CAPSTONE_MINOR);
		CHECK(same > 0);
	}
	return check_done("test_t16_text");
}
