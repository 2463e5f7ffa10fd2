/*
 * ds5_dump.h - reader for ARM DS-5's tab-separated trace dumps (the
 * ds5-dumps/ files of the shared captures): one record per executed
 * instruction plus event records. Header-only, for the golden tests.
 *
 * Columns: Record Type, Index, Address ("S:0xC002115C" or "S:?"),
 * Opcode ("0x6963" or "0x?"), Cycles, Detail, Branch ("true"/"false"),
 * Condition Failure ("fail" or empty).
 */
#ifndef CSD_TEST_DS5_DUMP_H
#define CSD_TEST_DS5_DUMP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ds5_kind {
	DS5_INSN = 1,        /* address and opcode known */
	DS5_INSN_UNKNOWN,    /* "Instruction" with address or opcode "?" */
	DS5_CYCLE_COUNT,     /* "Cycle Count" (cycles before trace went off) */
	DS5_TRACE_ON,        /* Info: Tracing enabled */
	DS5_EXC_RETURN,      /* Info: Return from exception */
	DS5_TIMESTAMP,
	DS5_OTHER,
};

struct ds5_rec {
	uint8_t kind;
	uint8_t branch;      /* Branch column says true */
	uint8_t cond_fail;   /* Condition Failure column says fail */
	uint8_t secure;      /* address prefix S: */
	uint32_t addr;
	uint32_t opcode;
	uint64_t value;      /* cycles, or timestamp */
	int has_value;
	char mnemonic[16];   /* first word of Detail */
	int line;            /* line in the file */
};

struct ds5_dump {
	struct ds5_rec *rec;
	size_t n;
};

static inline void ds5_free(struct ds5_dump *d)
{
	free(d->rec);
	d->rec = NULL;
	d->n = 0;
}

/* Split a line at tabs in place; returns the field count (max nf). */
static inline int ds5_fields(char *line, char **f, int nf)
{
	int n = 0;
	f[n++] = line;
	for (char *p = line; *p && n < nf; p++) {
		if (*p == '\t') {
			*p = 0;
			f[n++] = p + 1;
		}
	}
	for (int i = n; i < nf; i++)
		f[i] = (char *)"";
	return n;
}

static inline int ds5_load(const char *path, struct ds5_dump *d)
{
	FILE *fp = fopen(path, "r");
	char line[1024];
	size_t cap = 0;
	int lineno = 0;
	memset(d, 0, sizeof(*d));
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		char *f[8];
		lineno++;
		line[strcspn(line, "\r\n")] = 0;
		ds5_fields(line, f, 8);
		struct ds5_rec r;
		memset(&r, 0, sizeof(r));
		r.line = lineno;
		if (strcmp(f[0], "Instruction") == 0) {
			const char *a = f[2];
			r.secure = a[0] == 'S';
			const char *colon = strchr(a, ':');
			a = colon ? colon + 1 : a;
			int addr_known = strncmp(a, "0x", 2) == 0;
			int op_known = strncmp(f[3], "0x", 2) == 0 && f[3][2] != '?';
			r.kind = addr_known && op_known ? DS5_INSN : DS5_INSN_UNKNOWN;
			if (addr_known)
				r.addr = (uint32_t)strtoul(a, NULL, 16);
			if (op_known)
				r.opcode = (uint32_t)strtoul(f[3], NULL, 16);
			if (*f[4]) {
				r.value = strtoull(f[4], NULL, 10);
				r.has_value = 1;
			}
			sscanf(f[5], "%15s", r.mnemonic);
			r.branch = strcmp(f[6], "true") == 0;
			r.cond_fail = strcmp(f[7], "fail") == 0;
		} else if (strcmp(f[0], "Cycle Count") == 0) {
			r.kind = DS5_CYCLE_COUNT;
			r.value = strtoull(f[4], NULL, 10);
			r.has_value = 1;
		} else if (strcmp(f[0], "Info") == 0) {
			r.kind = strstr(f[5], "Tracing enabled") ? DS5_TRACE_ON
			       : strstr(f[5], "Return from exception") ? DS5_EXC_RETURN : DS5_OTHER;
		} else if (strcmp(f[0], "Timestamp") == 0) {
			const char *c = strstr(f[5], ": ");
			r.kind = DS5_TIMESTAMP;
			r.value = c ? strtoull(c + 2, NULL, 10) : 0;
			r.has_value = c != NULL;
		} else {
			continue; /* header, Function, Debug stop */
		}
		if (d->n == cap) {
			size_t ncap = cap ? cap * 2 : 1024;
			struct ds5_rec *nr = realloc(d->rec, ncap * sizeof(*nr));
			if (!nr) {
				fclose(fp);
				ds5_free(d);
				return -1;
			}
			d->rec = nr;
			cap = ncap;
		}
		d->rec[d->n++] = r;
	}
	fclose(fp);
	return 0;
}

#endif
