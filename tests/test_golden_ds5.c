/*
 * Golden decodes: every TC2 source decoded instruction by instruction and
 * compared with ARM DS-5's own decode (../shared/traces/TC2/ds5-dumps):
 * the sequence of executed instruction addresses must be identical, and so
 * must each instruction's cycle count. DS-5 records whose address or opcode
 * is "?" are instructions nobody can know (code not in the image) and are
 * left out of the comparison. Also: the batch interface gives the same
 * records as the one-record one.
 */
#include <dirent.h>

#include "check.h"
#include "ds5_dump.h"
#include "flow_run.h"

static void golden(const char *dir, const char *dump_name, unsigned id)
{
	char path[2400];
	snprintf(path, sizeof(path), "%s/ds5-dumps/%s", dir, dump_name);
	struct ds5_dump d;
	CHECK_EQ(ds5_load(path, &d), 0);
	struct flow_run fr;
	memset(&fr, 0, sizeof(fr));
	CHECK_EQ(flow_run_snapshot(dir, id, CSD_FLOW_INSN, 0, &fr), 0);

	size_t i = 0, j = 0, matched = 0, cyc_ok = 0, cyc_bad = 0, first_bad_cyc = (size_t)-1;
	int diverged = 0;
	for (;;) {
		while (i < d.n && d.rec[i].kind != DS5_INSN)
			i++;
		while (j < fr.n && fr.rec[j].type != CSD_REC_INSN)
			j++;
		if (i >= d.n || j >= fr.n)
			break;
		if (d.rec[i].addr != fr.rec[j].addr) {
			diverged = 1;
			fprintf(stderr, "%s: instruction %zu differs: DS-5 line %d 0x%08x, csdec 0x%08llx (record %zu)\n",
				dump_name, matched, d.rec[i].line, d.rec[i].addr, (unsigned long long)fr.rec[j].addr, j);
			break;
		}
		int ds5_has = d.rec[i].has_value, ours = (fr.rec[j].flags & CSD_RECF_CYCLES) != 0;
		/* Without cycle-accurate trace neither side has cycles. */
		if ((!ds5_has && !ours) || (ds5_has && ours && d.rec[i].value == fr.rec[j].cycles)) {
			cyc_ok++;
		} else {
			if (first_bad_cyc == (size_t)-1) {
				first_bad_cyc = matched;
				fprintf(stderr, "%s: first cycle mismatch at DS-5 line %d (0x%08x): DS-5 %llu, csdec %llu\n",
					dump_name, d.rec[i].line, d.rec[i].addr, (unsigned long long)d.rec[i].value,
					(unsigned long long)fr.rec[j].cycles);
			}
			cyc_bad++;
		}
		matched++;
		i++;
		j++;
	}
	/* Both sequences must end together. */
	while (i < d.n && d.rec[i].kind != DS5_INSN)
		i++;
	while (j < fr.n && fr.rec[j].type != CSD_REC_INSN)
		j++;
	if (!diverged && (i < d.n || j < fr.n))
		fprintf(stderr, "%s: one decode is longer: DS-5 left at line %d, csdec left at record %zu of %zu\n",
			dump_name, i < d.n ? d.rec[i].line : -1, j, fr.n);
	/* The gaps: DS-5's "Cycle Count ... Tracing disabled" records against
	 * csdec's cycle_count records, in order. */
	size_t gi = 0, gj = 0, gaps = 0, gaps_bad = 0;
	for (;;) {
		while (gi < d.n && d.rec[gi].kind != DS5_CYCLE_COUNT)
			gi++;
		while (gj < fr.n && fr.rec[gj].type != CSD_REC_CYCLE_COUNT)
			gj++;
		if (gi >= d.n || gj >= fr.n)
			break;
		if (d.rec[gi].value != fr.rec[gj].cycles && gaps_bad++ == 0)
			fprintf(stderr, "%s: gap cycles differ at DS-5 line %d: DS-5 %llu, csdec %llu\n", dump_name,
				d.rec[gi].line, (unsigned long long)d.rec[gi].value,
				(unsigned long long)fr.rec[gj].cycles);
		gaps++;
		gi++;
		gj++;
	}
	CHECK(gi >= d.n && gj >= fr.n);
	CHECK_EQ(gaps_bad, 0);
	printf("%s: %zu instructions equal, cycles equal for %zu, differ for %zu; %zu gap cycle counts, %zu differ\n",
	       dump_name, matched, cyc_ok, cyc_bad, gaps, gaps_bad);
	CHECK(!diverged);
	CHECK(i >= d.n && j >= fr.n);
	CHECK(matched > 1000);
	CHECK_EQ(cyc_bad, 0);
	ds5_free(&d);
	flow_run_free(&fr);
}

/* csd_flow_next_batch() (by turns with csd_flow_next()) gives exactly the
 * records csd_flow_next() gives, in both record modes, with the capture fed
 * whole and in small pieces. */
static void batch_same(const char *dir, unsigned id)
{
	static const uint32_t modes[2] = { 0, CSD_FLOW_INSN };
	static const size_t pieces[2] = { 0, 7 };
	for (int m = 0; m < 2; m++) {
		for (int p = 0; p < 2; p++) {
			struct flow_run a, b;
			memset(&a, 0, sizeof(a));
			memset(&b, 0, sizeof(b));
			CHECK_EQ(flow_run_snapshot_mode(dir, id, modes[m], pieces[p], FLOW_RUN_NEXT, &a), 0);
			CHECK_EQ(flow_run_snapshot_mode(dir, id, modes[m], pieces[p], FLOW_RUN_MIXED, &b), 0);
			CHECK_EQ(a.n, b.n);
			size_t differ = 0;
			for (size_t k = 0; k < a.n && k < b.n; k++)
				differ += !flow_run_same(&a.rec[k], &b.rec[k]);
			CHECK_EQ(differ, 0);
			CHECK(a.n > 100);
			flow_run_free(&a);
			flow_run_free(&b);
		}
	}
}

/* Every DS-5 dump of every capture under traces/ (named <protocol>_0x<ID>.txt
 * in the capture's ds5-dumps/), so captures added later are checked the
 * same way; TC2's four at least. */
int main(void)
{
	char root[1024];
	snprintf(root, sizeof(root), "%s/traces", check_shared_dir());
	DIR *d = opendir(root);
	CHECK(d != NULL);
	int dumps = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char dir[1500], dumpdir[1600];
		snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
		snprintf(dumpdir, sizeof(dumpdir), "%s/ds5-dumps", dir);
		DIR *dd = opendir(dumpdir);
		if (!dd)
			continue;
		struct dirent *fe;
		while ((fe = readdir(dd))) {
			const char *id = strstr(fe->d_name, "_0x");
			if (!id || !strstr(fe->d_name, ".txt"))
				continue;
			golden(dir, fe->d_name, (unsigned)strtoul(id + 1, NULL, 16));
			batch_same(dir, (unsigned)strtoul(id + 1, NULL, 16));
			dumps++;
		}
		closedir(dd);
	}
	if (d)
		closedir(d);
	CHECK(dumps >= 4);
	return check_done("test_golden_ds5");
}
