/* snapshot.c - CoreSight snapshot directories (csd_snapshot_*).
 *
 * snapshot.ini names the device files ([device_list]) and the trace
 * metadata ([trace] metadata=trace.ini). Each device file has a [device]
 * section (name, class, type), [regs] and, for cores, [dump*] sections.
 * trace.ini lists the buffers ([trace_buffers] buffers=, one [bufferN] each
 * with name, file, format) and links sources to buffers ([source_buffers]
 * source=buffer name) and cores to sources ([core_trace_sources]
 * core=source). Rules follow OpenCSD's snapshot reader where the format
 * leaves a choice; errors name the file and line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csdec.h"
#include "ini.h"

#define MAX_DEVICES 4096
#define MAX_BUFFERS 256
#define MAX_TOTAL_INI (64u << 20)       /* bytes of .ini text per snapshot */
#define MAX_PATH_LEN 4096

struct snap_device {
	const char *file;               /* as listed in snapshot.ini */
	struct csdi_ini ini;
	const char *name, *class_name, *type;
};

struct csd_snapshot {
	struct csdi_ini top, trace;
	struct snap_device *devices;
	size_t n_devices;
	struct csd_snapshot_buffer *buffers;
	size_t n_buffers;
	struct csd_snapshot_source *sources;
	size_t n_sources;
	struct csd_snapshot_dump *dumps;
	size_t n_dumps, cap_dumps;
	const char *trace_file;         /* metadata file name, for messages */
	char **paths;                   /* joined paths owned by the snapshot */
	size_t n_paths, cap_paths;
	size_t ini_bytes;
};

struct ctx {
	const char *dir;
	char *err;
	size_t errlen;
};

static void set_err(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->err || !c->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
}

/* dir + "/" + name (an absolute name as it is), kept until
 * csd_snapshot_free(). */
static int join(csd_snapshot *snap, struct ctx *c, const char *name, const char **out)
{
	size_t dl = name[0] == '/' ? 0 : strlen(c->dir), nl = strlen(name);
	if (dl + 1 + nl >= MAX_PATH_LEN) {
		set_err(c, "%s: path too long", name);
		return CSD_EFORMAT;
	}
	if (snap->n_paths == snap->cap_paths) {
		size_t cap = snap->cap_paths ? snap->cap_paths * 2 : 32;
		char **p = realloc(snap->paths, cap * sizeof(*p));
		if (!p)
			goto nomem;
		snap->paths = p;
		snap->cap_paths = cap;
	}
	char *s = malloc(dl + nl + 2);
	if (!s)
		goto nomem;
	if (name[0] == '/') {
		memcpy(s, name, nl + 1);
	} else {
		memcpy(s, c->dir, dl);
		s[dl] = '/';
		memcpy(s + dl + 1, name, nl + 1);
	}
	snap->paths[snap->n_paths++] = s;
	*out = s;
	return CSD_OK;
nomem:
	set_err(c, "out of memory");
	return CSD_ENOMEM;
}

struct name_ref {
	char *key;              /* lower-cased name */
	size_t index;
};

static int cmp_name_ref(const void *a, const void *b)
{
	const struct name_ref *x = a, *y = b;
	int d = strcmp(x->key, y->key);
	return d ? d : (x->index > y->index) - (x->index < y->index);
}

/* Is a name given twice among names[0..n)? Compared ignoring case (for a
 * register: the part before '(', trimmed). Returns 1 with *first and
 * *second the indices of the earliest such pair, 0 if all differ, -1 if
 * memory is short. Sorting keeps it n log n for files of any size. */
static int find_twice(const char *const *names, size_t n, int reg_form, size_t *first, size_t *second)
{
	if (n < 2)
		return 0;
	struct name_ref *refs = calloc(n, sizeof(*refs));
	if (!refs)
		return -1;
	int found = 0;
	size_t made = 0;
	for (; made < n; made++) {
		const char *name = names[made];
		size_t len = reg_form ? strcspn(name, "(") : strlen(name);
		while (reg_form && len && (name[len - 1] == ' ' || name[len - 1] == '\t'))
			len--;
		refs[made].key = malloc(len + 1);
		if (!refs[made].key) {
			found = -1;
			goto out;
		}
		for (size_t k = 0; k < len; k++)
			refs[made].key[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] - 'A' + 'a' : name[k]);
		refs[made].key[len] = 0;
		refs[made].index = made;
	}
	qsort(refs, n, sizeof(*refs), cmp_name_ref);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(refs[i].key, refs[i - 1].key) == 0 && (!found || refs[i].index < *second)) {
			*first = refs[i - 1].index;
			*second = refs[i].index;
			found = 1;
		}
	}
out:
	for (size_t i = 0; i < made; i++)
		free(refs[i].key);
	free(refs);
	return found;
}

/* A section the reader looks up by name must not come twice: which one
 * would count? [device_list] and [regs] may repeat (all are read), as may
 * [dump...] sections (each is a dump). */
static int check_sections(struct ctx *c, const struct csdi_ini *ini, const char *shown)
{
	const char **names = calloc(ini->n_sections ? ini->n_sections : 1, sizeof(*names));
	size_t *index = calloc(ini->n_sections ? ini->n_sections : 1, sizeof(*index));
	size_t n = 0, a, b;
	int rc = CSD_OK;
	if (!names || !index) {
		rc = CSD_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ini->n_sections; i++) {
		const char *nm = ini->sections[i].name;
		if (csdi_strcaseeq(nm, "device_list") || csdi_strcaseeq(nm, "regs") || csdi_strcaseprefix(nm, "dump"))
			continue;
		index[n] = i;
		names[n++] = nm;
	}
	int t = find_twice(names, n, 0, &a, &b);
	if (t < 0) {
		rc = CSD_ENOMEM;
	} else if (t) {
		const struct csdi_ini_section *x = &ini->sections[index[a]], *y = &ini->sections[index[b]];
		set_err(c, "%s:%u: section [%s] given twice (first on line %u)", shown, y->line, y->name, x->line);
		rc = CSD_EFORMAT;
	}
out:
	if (rc == CSD_ENOMEM)
		set_err(c, "out of memory");
	free(names);
	free(index);
	return rc;
}

/* A register given twice, within one [regs] section under two spellings
 * ("ETMCR", "ETMCR(0x000)") or in two of them. */
static int check_regs(struct ctx *c, const struct csdi_ini *ini, const char *shown)
{
	size_t n = 0, a, b;
	for (size_t s = 0; s < ini->n_sections; s++)
		if (csdi_strcaseeq(ini->sections[s].name, "regs"))
			n += ini->sections[s].count;
	const char **names = calloc(n ? n : 1, sizeof(*names));
	const struct csdi_ini_entry **ent = calloc(n ? n : 1, sizeof(*ent));
	int rc = CSD_OK;
	if (!names || !ent) {
		rc = CSD_ENOMEM;
		goto out;
	}
	n = 0;
	for (size_t s = 0; s < ini->n_sections; s++) {
		const struct csdi_ini_section *sec = &ini->sections[s];
		if (!csdi_strcaseeq(sec->name, "regs"))
			continue;
		for (size_t i = 0; i < sec->count; i++) {
			ent[n] = &ini->entries[sec->first + i];
			names[n] = ent[n]->key;
			n++;
		}
	}
	int t = find_twice(names, n, 1, &a, &b);
	if (t < 0) {
		rc = CSD_ENOMEM;
	} else if (t) {
		set_err(c, "%s:%u: register %s given twice (first as %s on line %u)", shown, ent[b]->line, ent[b]->key,
			ent[a]->key, ent[a]->line);
		rc = CSD_EFORMAT;
	}
out:
	if (rc == CSD_ENOMEM)
		set_err(c, "out of memory");
	free(names);
	free(ent);
	return rc;
}

static int load_ini(csd_snapshot *snap, struct ctx *c, struct csdi_ini *ini, const char *name,
		    const char *listed_in, unsigned listed_line, const char *what)
{
	const char *path;
	char msg[512];
	int rc = join(snap, c, name, &path);
	if (rc)
		return rc;
	rc = csdi_ini_load(ini, path, name, msg, sizeof(msg));
	if (rc == CSD_EIO && listed_in)         /* say where the file was named */
		set_err(c, "%s:%u: %s %s", listed_in, listed_line, what, msg);
	else if (rc == CSD_EIO)
		set_err(c, "%s (directory '%s')", msg, c->dir);
	else if (rc)
		set_err(c, "%s", msg);
	if (rc)
		return rc;
	rc = check_sections(c, ini, name);
	if (rc)
		return rc;
	snap->ini_bytes += ini->size;
	if (snap->ini_bytes > MAX_TOTAL_INI) {
		set_err(c, "%s: snapshot .ini files too large (over %u bytes in all)", name,
			(unsigned)MAX_TOTAL_INI);
		return CSD_EFORMAT;
	}
	return CSD_OK;
}

static const char *value_or_empty(const struct csdi_ini_entry *e)
{
	return e ? e->value : "";
}

/* ---- devices ---------------------------------------------------------- */

static int add_dump(csd_snapshot *snap, struct ctx *c, struct snap_device *d, const struct csdi_ini_section *sec)
{
	const struct csdi_ini *ini = &d->ini;
	const struct csdi_ini_entry *file = csdi_ini_get(ini, sec, "file");
	const struct csdi_ini_entry *addr = csdi_ini_get(ini, sec, "address");
	const struct csdi_ini_entry *num[3] = {
		addr, csdi_ini_get(ini, sec, "offset"), csdi_ini_get(ini, sec, "length"),
	};
	uint64_t val[3] = { 0, 0, 0 };

	if (!file || !*file->value) {
		set_err(c, "%s:%u: [%s] has no file", d->file, sec->line, sec->name);
		return CSD_EFORMAT;
	}
	if (!addr) {
		set_err(c, "%s:%u: [%s] has no address", d->file, sec->line, sec->name);
		return CSD_EFORMAT;
	}
	for (int i = 0; i < 3; i++) {
		if (num[i] && csdi_parse_u64(num[i]->value, &val[i])) {
			set_err(c, "%s:%u: bad number '%s' for %s", d->file, num[i]->line, num[i]->value, num[i]->key);
			return CSD_EFORMAT;
		}
	}
	if (snap->n_dumps == snap->cap_dumps) {
		size_t cap = snap->cap_dumps ? snap->cap_dumps * 2 : 16;
		struct csd_snapshot_dump *p = realloc(snap->dumps, cap * sizeof(*p));
		if (!p) {
			set_err(c, "out of memory");
			return CSD_ENOMEM;
		}
		snap->dumps = p;
		snap->cap_dumps = cap;
	}
	struct csd_snapshot_dump *dump = &snap->dumps[snap->n_dumps];
	int rc = join(snap, c, file->value, &dump->path);
	if (rc)
		return rc;
	const struct csdi_ini_entry *space = csdi_ini_get(ini, sec, "space");
	dump->device = d->name;
	dump->space = space ? space->value : NULL;
	dump->address = val[0];
	dump->offset = val[1];
	dump->length = val[2];
	snap->n_dumps++;
	return CSD_OK;
}

static int read_device(csd_snapshot *snap, struct ctx *c, struct snap_device *d, unsigned listed_line)
{
	int rc = load_ini(snap, c, &d->ini, d->file, "snapshot.ini", listed_line, "device file");
	if (rc)
		return rc;
	rc = check_regs(c, &d->ini, d->file);
	if (rc)
		return rc;
	const struct csdi_ini_section *dev = csdi_ini_section(&d->ini, "device");
	if (!dev) {
		set_err(c, "%s: no [device] section", d->file);
		return CSD_EFORMAT;
	}
	const struct csdi_ini_entry *name = csdi_ini_get(&d->ini, dev, "name");
	if (!name || !*name->value) {
		set_err(c, "%s:%u: [device] has no name", d->file, dev->line);
		return CSD_EFORMAT;
	}
	d->name = name->value;
	d->class_name = value_or_empty(csdi_ini_get(&d->ini, dev, "class"));
	d->type = value_or_empty(csdi_ini_get(&d->ini, dev, "type"));
	for (size_t i = 0; i < d->ini.n_sections; i++) {
		const struct csdi_ini_section *sec = &d->ini.sections[i];
		if (csdi_strcaseprefix(sec->name, "dump")) {
			rc = add_dump(snap, c, d, sec);
			if (rc)
				return rc;
		}
	}
	return CSD_OK;
}

static struct snap_device *find_device(const csd_snapshot *snap, const char *name)
{
	for (size_t i = 0; i < snap->n_devices; i++)
		if (csdi_strcaseeq(snap->devices[i].name, name))
			return &snap->devices[i];
	return NULL;
}

static int lower_eq(char a, char b)
{
	if (a >= 'A' && a <= 'Z')
		a = (char)(a - 'A' + 'a');
	if (b >= 'A' && b <= 'Z')
		b = (char)(b - 'A' + 'a');
	return a == b;
}

/* Register names may carry an address or id: "ETMCR(0x000)", "ETMCR(id:0x0)",
 * "CNTPCT(size:64)". Compare the part before '(' (trimmed), ignoring case. */
static int reg_name_matches(const char *key, const char *want)
{
	while (*want && *want != '(' && lower_eq(*key, *want)) {
		key++;
		want++;
	}
	while (*want == ' ' || *want == '\t')
		want++;
	while (*key == ' ' || *key == '\t')
		key++;
	return (*key == 0 || *key == '(') && (*want == 0 || *want == '(');
}

static const struct csdi_ini_entry *find_reg(const struct snap_device *d, const char *reg)
{
	for (size_t s = 0; s < d->ini.n_sections; s++) {
		const struct csdi_ini_section *sec = &d->ini.sections[s];
		if (!csdi_strcaseeq(sec->name, "regs"))
			continue;
		for (size_t i = 0; i < sec->count; i++) {
			const struct csdi_ini_entry *e = &d->ini.entries[sec->first + i];
			if (reg_name_matches(e->key, reg))
				return e;
		}
	}
	return NULL;
}

/* A 32-bit register of a trace source; 0 when absent. */
static int source_reg(struct ctx *c, const struct snap_device *d, const char *reg, uint32_t *out)
{
	const struct csdi_ini_entry *e = find_reg(d, reg);
	uint64_t v;

	*out = 0;
	if (!e)
		return CSD_OK;
	if (csdi_parse_u64(e->value, &v)) {
		set_err(c, "%s:%u: bad number '%s' for %s", d->file, e->line, e->value, e->key);
		return CSD_EFORMAT;
	}
	if (v > UINT32_MAX) {
		set_err(c, "%s:%u: %s value does not fit in 32 bits", d->file, e->line, e->key);
		return CSD_EFORMAT;
	}
	*out = (uint32_t)v;
	return CSD_OK;
}

/* ---- trace metadata --------------------------------------------------- */

static uint32_t frame_format_of(const char *format)
{
	if (csdi_strcaseeq(format, "coresight"))
		return CSD_FRAME_ALIGNED;
	if (csdi_strcaseeq(format, "dstream_coresight"))
		return CSD_FRAME_PORT;
	return CSD_FRAME_RAW;   /* source_data, or a format without frames */
}

static int read_buffers(csd_snapshot *snap, struct ctx *c, const char *trace_name)
{
	const struct csdi_ini *ini = &snap->trace;
	const struct csdi_ini_section *list = csdi_ini_section(ini, "trace_buffers");
	const struct csdi_ini_entry *buffers = csdi_ini_get(ini, list, "buffers");

	if (!buffers)
		return CSD_OK;
	/* Count the names first: "a, b,c" -> 3. */
	size_t n = 1;
	for (const char *p = buffers->value; *p; p++)
		n += *p == ',';
	if (n > MAX_BUFFERS) {
		set_err(c, "%s:%u: too many buffers", trace_name, buffers->line);
		return CSD_EFORMAT;
	}
	snap->buffers = calloc(n, sizeof(*snap->buffers));
	if (!snap->buffers) {
		set_err(c, "out of memory");
		return CSD_ENOMEM;
	}
	const char *p = buffers->value;
	while (*p) {
		char sec_name[256];
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len >= sizeof(sec_name)) {
			set_err(c, "%s:%u: buffer name too long", trace_name, buffers->line);
			return CSD_EFORMAT;
		}
		memcpy(sec_name, p, len);
		sec_name[len] = 0;
		p = comma ? comma + 1 : p + strlen(p);
		if (!len)
			continue;
		const struct csdi_ini_section *sec = csdi_ini_section(ini, sec_name);
		if (!sec) {
			set_err(c, "%s:%u: no [%s] section for buffer '%s'", trace_name, buffers->line, sec_name, sec_name);
			return CSD_EFORMAT;
		}
		const struct csdi_ini_entry *name = csdi_ini_get(ini, sec, "name");
		const struct csdi_ini_entry *file = csdi_ini_get(ini, sec, "file");
		const struct csdi_ini_entry *format = csdi_ini_get(ini, sec, "format");
		if (!name || !*name->value) {
			set_err(c, "%s:%u: [%s] has no name", trace_name, sec->line, sec->name);
			return CSD_EFORMAT;
		}
		if (!file || !*file->value) {
			set_err(c, "%s:%u: [%s] has no file", trace_name, sec->line, sec->name);
			return CSD_EFORMAT;
		}
		struct csd_snapshot_buffer *b = &snap->buffers[snap->n_buffers];
		int rc = join(snap, c, file->value, &b->path);
		if (rc)
			return rc;
		b->name = name->value;
		b->format = value_or_empty(format);
		b->frame_format = frame_format_of(b->format);
		snap->n_buffers++;
	}
	return CSD_OK;
}

/* Index of the buffer called `name` (its name= key); -1 if none. */
static int find_buffer(const csd_snapshot *snap, const char *name)
{
	for (size_t i = 0; i < snap->n_buffers; i++)
		if (csdi_strcaseeq(snap->buffers[i].name, name))
			return (int)i;
	return -1;
}

static enum csd_protocol protocol_of(const char *type)
{
	if (csdi_strcaseprefix(type, "ETM3"))
		return CSD_PROTO_ETM3;
	if (csdi_strcaseprefix(type, "PTM1") || csdi_strcaseprefix(type, "PFT1"))
		return CSD_PROTO_PTM;
	return CSD_PROTO_UNKNOWN;
}

static uint8_t profile_of(const char *core)
{
	if (core && csdi_strcaseprefix(core, "Cortex-M"))
		return CSD_CORE_M;
	if (core && csdi_strcaseprefix(core, "Cortex-R"))
		return CSD_CORE_R;
	return CSD_CORE_A;
}

static int build_source(csd_snapshot *snap, struct ctx *c, const struct snap_device *d,
			struct csd_snapshot_source *src)
{
	const struct csdi_ini *tr = &snap->trace;
	struct csd_trace_config *cfg = &src->config;
	uint32_t traceidr = 0, tcr = 0;
	int rc;

	src->name = d->name;
	src->type = d->type;
	src->buffer = -1;
	cfg->size = sizeof(*cfg);
	cfg->protocol = protocol_of(d->type);
	if ((rc = source_reg(c, d, "ETMCR", &cfg->etmcr)) ||
	    (rc = source_reg(c, d, "ETMCCER", &cfg->etmccer)) ||
	    (rc = source_reg(c, d, "ETMIDR", &cfg->etmidr)) ||
	    (rc = source_reg(c, d, "ETMTRACEIDR", &traceidr)))
		return rc;
	cfg->trace_id = (uint8_t)(traceidr & 0x7F);
	/* Software trace sources keep their ID in bits 22:16 of ITMTCR /
	 * STMTCSR; listing it lets tools attribute their bytes. */
	if (cfg->protocol == CSD_PROTO_UNKNOWN && !find_reg(d, "ETMTRACEIDR")) {
		const char *reg = csdi_strcaseprefix(d->type, "ITM") ? "ITMTCR" :
				  csdi_strcaseprefix(d->type, "STM") ? "STMTCSR" : NULL;
		if (reg && (rc = source_reg(c, d, reg, &tcr)))
			return rc;
		cfg->trace_id = (uint8_t)((tcr >> 16) & 0x7F);
	}

	const struct csdi_ini_section *sb = csdi_ini_section(tr, "source_buffers");
	const struct csdi_ini_entry *e = csdi_ini_get(tr, sb, d->name);
	if (e) {
		src->buffer = find_buffer(snap, e->value);
		if (src->buffer < 0) {
			set_err(c, "%s:%u: source %s names unknown buffer '%s'", snap->trace_file, e->line, d->name,
				e->value);
			return CSD_EFORMAT;
		}
	}
	const struct csdi_ini_section *cs = csdi_ini_section(tr, "core_trace_sources");
	for (size_t i = 0; cs && i < cs->count; i++) {
		const struct csdi_ini_entry *ce = &tr->entries[cs->first + i];
		if (csdi_strcaseeq(ce->value, d->name)) {
			src->core_name = ce->key;
			const struct snap_device *core = find_device(snap, ce->key);
			src->core_type = core && *core->type ? core->type : NULL;
			break;
		}
	}
	/* DS-5 names cores after their type ("Cortex-A15_0"): fall back on
	 * the name when the core has no device file. */
	cfg->core_profile = profile_of(src->core_type ? src->core_type : src->core_name);
	return CSD_OK;
}

/* ---- open ------------------------------------------------------------- */

static int open_snapshot(csd_snapshot *snap, struct ctx *c)
{
	int rc;

	rc = load_ini(snap, c, &snap->top, "snapshot.ini", NULL, 0, NULL);
	if (rc)
		return rc;
	const struct csdi_ini *top = &snap->top;
	const struct csdi_ini_section *ss = csdi_ini_section(top, "snapshot");
	const struct csdi_ini_entry *version = csdi_ini_get(top, ss, "version");
	if (version && strcmp(version->value, "1.0") && strcmp(version->value, "1")) {
		set_err(c, "snapshot.ini:%u: unsupported snapshot version '%s'", version->line, version->value);
		return CSD_EFORMAT;
	}

	/* Devices, in the order listed (every [device_list] section). */
	size_t n = 0;
	for (size_t s = 0; s < top->n_sections; s++)
		if (csdi_strcaseeq(top->sections[s].name, "device_list"))
			n += top->sections[s].count;
	if (n > MAX_DEVICES) {
		set_err(c, "snapshot.ini: too many devices (over %u)", (unsigned)MAX_DEVICES);
		return CSD_EFORMAT;
	}
	snap->devices = calloc(n ? n : 1, sizeof(*snap->devices));
	if (!snap->devices) {
		set_err(c, "out of memory");
		return CSD_ENOMEM;
	}
	for (size_t s = 0; s < top->n_sections; s++) {
		const struct csdi_ini_section *sec = &top->sections[s];
		if (!csdi_strcaseeq(sec->name, "device_list"))
			continue;
		for (size_t i = 0; i < sec->count; i++) {
			const struct csdi_ini_entry *e = &top->entries[sec->first + i];
			struct snap_device *d = &snap->devices[snap->n_devices];
			if (!*e->value) {
				set_err(c, "snapshot.ini:%u: empty device file name", e->line);
				return CSD_EFORMAT;
			}
			d->file = e->value;
			snap->n_devices++;      /* counted now so it is freed on error */
			rc = read_device(snap, c, d, e->line);
			if (rc)
				return rc;
			for (size_t k = 0; k + 1 < snap->n_devices; k++) {
				if (csdi_strcaseeq(snap->devices[k].name, d->name)) {
					set_err(c, "%s: device name '%s' already used by %s", d->file, d->name,
						snap->devices[k].file);
					return CSD_EFORMAT;
				}
			}
		}
	}

	/* Trace metadata (optional: a snapshot may hold only memory). */
	const struct csdi_ini_section *ts = csdi_ini_section(top, "trace");
	const struct csdi_ini_entry *meta = csdi_ini_get(top, ts, "metadata");
	const char *trace_name = meta ? meta->value : NULL;
	snap->trace_file = trace_name;
	if (meta) {
		if (!*meta->value) {
			set_err(c, "snapshot.ini:%u: empty metadata file name", meta->line);
			return CSD_EFORMAT;
		}
		rc = load_ini(snap, c, &snap->trace, meta->value, "snapshot.ini", meta->line, "trace metadata");
		if (rc)
			return rc;
		rc = read_buffers(snap, c, trace_name);
		if (rc)
			return rc;
	}

	size_t n_src = 0;
	for (size_t i = 0; i < snap->n_devices; i++)
		n_src += csdi_strcaseeq(snap->devices[i].class_name, "trace_source");
	snap->sources = calloc(n_src ? n_src : 1, sizeof(*snap->sources));
	if (!snap->sources) {
		set_err(c, "out of memory");
		return CSD_ENOMEM;
	}
	for (size_t i = 0; i < snap->n_devices; i++) {
		const struct snap_device *d = &snap->devices[i];
		if (!csdi_strcaseeq(d->class_name, "trace_source"))
			continue;
		rc = build_source(snap, c, d, &snap->sources[snap->n_sources]);
		if (rc)
			return rc;
		snap->n_sources++;
	}
	return CSD_OK;
}

int csd_snapshot_open(const char *dir, csd_snapshot **out, char *errbuf, size_t errlen)
{
	struct ctx c = { dir, errbuf, errlen };

	if (out)
		*out = NULL;
	if (errbuf && errlen)
		errbuf[0] = 0;
	if (!dir || !out) {
		set_err(&c, "invalid argument");
		return CSD_EINVAL;
	}
	csd_snapshot *snap = calloc(1, sizeof(*snap));
	if (!snap) {
		set_err(&c, "out of memory");
		return CSD_ENOMEM;
	}
	int rc = open_snapshot(snap, &c);
	if (rc) {
		csd_snapshot_free(snap);
		return rc;
	}
	*out = snap;
	return CSD_OK;
}

void csd_snapshot_free(csd_snapshot *snap)
{
	if (!snap)
		return;
	for (size_t i = 0; i < snap->n_devices; i++)
		csdi_ini_free(&snap->devices[i].ini);
	free(snap->devices);
	csdi_ini_free(&snap->top);
	csdi_ini_free(&snap->trace);
	free(snap->buffers);
	free(snap->sources);
	free(snap->dumps);
	for (size_t i = 0; i < snap->n_paths; i++)
		free(snap->paths[i]);
	free(snap->paths);
	free(snap);
}

size_t csd_snapshot_num_buffers(const csd_snapshot *snap)
{
	return snap ? snap->n_buffers : 0;
}

const struct csd_snapshot_buffer *csd_snapshot_buffer(const csd_snapshot *snap, size_t i)
{
	return snap && i < snap->n_buffers ? &snap->buffers[i] : NULL;
}

size_t csd_snapshot_num_sources(const csd_snapshot *snap)
{
	return snap ? snap->n_sources : 0;
}

const struct csd_snapshot_source *csd_snapshot_source(const csd_snapshot *snap, size_t i)
{
	return snap && i < snap->n_sources ? &snap->sources[i] : NULL;
}

size_t csd_snapshot_num_dumps(const csd_snapshot *snap)
{
	return snap ? snap->n_dumps : 0;
}

const struct csd_snapshot_dump *csd_snapshot_dump(const csd_snapshot *snap, size_t i)
{
	return snap && i < snap->n_dumps ? &snap->dumps[i] : NULL;
}

int csd_snapshot_reg(const csd_snapshot *snap, const char *device, const char *reg, uint64_t *value)
{
	if (!snap || !device || !reg || !value)
		return CSD_EINVAL;
	const struct snap_device *d = find_device(snap, device);
	if (!d)
		return CSD_ENOENT;
	const struct csdi_ini_entry *e = find_reg(d, reg);
	if (!e)
		return CSD_ENOENT;
	if (csdi_parse_u64(e->value, value))
		return CSD_EFORMAT;
	return CSD_OK;
}

int csd_snapshot_load_image(const csd_snapshot *snap, const char *device, csd_image *img)
{
	if (!snap || !img)
		return CSD_EINVAL;
	int added = 0;
	for (size_t i = 0; i < snap->n_dumps; i++) {
		const struct csd_snapshot_dump *d = &snap->dumps[i];
		if (device && strcasecmp(d->device, device) != 0)
			continue;
		int rc = csd_image_add_file(img, d->path, d->offset, d->length, d->address);
		if (rc < 0)
			return rc;
		added++;
	}
	return added;
}
