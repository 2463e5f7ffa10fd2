/* ini.h - tokenizer for the .ini files of CoreSight snapshots (internal).
 *
 * Syntax (as DS-5 writes it and OpenCSD reads it): "[section]" headers and
 * "key=value" lines; a ';' or '#' starts a comment that runs to the end of
 * the line; blank lines are skipped; keys and values are trimmed of spaces
 * and tabs, and one pair of surrounding quotes is removed from values; a CR
 * ends the line's content like a comment. Anything else is an error naming the
 * file and line. Sizes are bounded, so hostile files cannot exhaust memory. */
#ifndef CSD_INI_H
#define CSD_INI_H

#include <stddef.h>
#include <stdint.h>

#define CSDI_INI_MAX_FILE (4u << 20)    /* bytes per file */
#define CSDI_INI_MAX_LINE 4096          /* bytes per line */

struct csdi_ini_entry {
	const char *key;
	const char *value;
	unsigned line;
	unsigned section;       /* index into csdi_ini.sections */
};

struct csdi_ini_section {
	const char *name;
	unsigned line;
	size_t first, count;    /* its entries: entries[first .. first+count) */
};

struct csdi_ini {
	char *text;             /* file contents, split in place into strings */
	size_t size;            /* bytes read */
	struct csdi_ini_entry *entries;
	size_t n_entries;
	struct csdi_ini_section *sections;
	size_t n_sections;
};

/*
 * Read and tokenize `path`. Error messages name the file as `shown`
 * ("trace.ini:7: expected key=value") and go to err (if not NULL).
 * Returns 0, CSD_EIO (cannot open or read), CSD_EFORMAT (bad syntax, too
 * large, binary data, key=value before any section, a key repeated within
 * one section) or CSD_ENOMEM. On error *ini is left empty.
 */
int csdi_ini_load(struct csdi_ini *ini, const char *path, const char *shown, char *err, size_t errlen);

void csdi_ini_free(struct csdi_ini *ini);

/* First section named `name` (case-insensitive), or NULL. */
const struct csdi_ini_section *csdi_ini_section(const struct csdi_ini *ini, const char *name);

/* Entry `key` (case-insensitive) of a section, or NULL. */
const struct csdi_ini_entry *csdi_ini_get(const struct csdi_ini *ini, const struct csdi_ini_section *sec,
					  const char *key);

/* Parse an unsigned number: "0x" hexadecimal or decimal (leading zeros do
 * not mean octal). Returns 0, or CSD_EFORMAT if not a number or too large. */
int csdi_parse_u64(const char *s, uint64_t *out);

/* ASCII case-insensitive comparisons (locale independent). */
int csdi_strcaseeq(const char *a, const char *b);
int csdi_strcaseprefix(const char *s, const char *prefix);

#endif
