/*
 * qemu_memlog.c - a QEMU TCG plugin that logs, for every executed guest
 * instruction, its address and encoding, then the virtual address, size and
 * direction of each data access it makes:
 *
 *     I <vaddr> <bytes>        an executed instruction: its encoding, in
 *                              memory order, two hex digits a byte
 *     R <vaddr> <size>         a load it made (size in bytes, decimal)
 *     W <vaddr> <size>         a store
 *
 * Loaded with `qemu-arm -plugin qemu_memlog.so,out=FILE` (tests/programs.mk
 * builds it for the host and records the test programs with it). The plugin
 * API of qemu 7.2 reports no loaded or stored value and lets a plugin read
 * neither registers nor guest memory, so the log has no values and no
 * instruction set: tests/test_data_roundtrip.c takes the instruction set
 * from the `-d exec` log of the same run and round-trips the addresses.
 *
 * Debian ships qemu-user without the plugin header, so the few API
 * declarations used are written out here, from the API's documentation:
 * the plugin exports its API version and an install function; callbacks are
 * registered at translation time, per translation block and per instruction.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMLOG_EXPORT __attribute__((visibility("default")))

/* The API version this plugin is written against; qemu refuses a plugin
 * whose version it does not support (7.2 supports 1). */
#define MEMLOG_API_VERSION 1

typedef uint64_t plugin_id;
typedef uint32_t plugin_meminfo;
struct plugin_tb;
struct plugin_insn;
struct plugin_info;

/* Callback flags: whether the callback reads or writes guest registers. */
enum { CB_NO_REGS = 0 };
/* Which accesses a memory callback wants: 1 loads, 2 stores, 3 both. */
enum { MEM_RW = 3 };

typedef void (*tb_trans_cb)(plugin_id id, struct plugin_tb *tb);
typedef void (*insn_exec_cb)(unsigned int vcpu, void *udata);
typedef void (*mem_cb)(unsigned int vcpu, plugin_meminfo info, uint64_t vaddr, void *udata);
typedef void (*atexit_cb)(plugin_id id, void *udata);

void qemu_plugin_register_vcpu_tb_trans_cb(plugin_id id, tb_trans_cb cb);
size_t qemu_plugin_tb_n_insns(const struct plugin_tb *tb);
struct plugin_insn *qemu_plugin_tb_get_insn(const struct plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct plugin_insn *insn);
const void *qemu_plugin_insn_data(const struct plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_cb(struct plugin_insn *insn, insn_exec_cb cb, int flags, void *udata);
void qemu_plugin_register_vcpu_mem_cb(struct plugin_insn *insn, mem_cb cb, int flags, int rw, void *udata);
unsigned int qemu_plugin_mem_size_shift(plugin_meminfo info);
bool qemu_plugin_mem_is_store(plugin_meminfo info);
void qemu_plugin_register_atexit_cb(plugin_id id, atexit_cb cb, void *udata);

MEMLOG_EXPORT extern int qemu_plugin_version;
MEMLOG_EXPORT int qemu_plugin_version = MEMLOG_API_VERSION;
MEMLOG_EXPORT int qemu_plugin_install(plugin_id id, const struct plugin_info *info, int argc, char **argv);

static FILE *out;

/* The I line is made once, at translation: the instruction's address and
 * encoding do not change between executions of its block. A block is
 * retranslated (a new line) if its page's code changes. */
static void on_insn(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	fputs((const char *)udata, out);
}

static void on_mem(unsigned int vcpu, plugin_meminfo info, uint64_t vaddr, void *udata)
{
	(void)vcpu;
	(void)udata;
	fprintf(out, "%c %" PRIx64 " %u\n", qemu_plugin_mem_is_store(info) ? 'W' : 'R', vaddr,
		1u << qemu_plugin_mem_size_shift(info));
}

static void on_tb(plugin_id id, struct plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	for (size_t i = 0; i < n; i++) {
		struct plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const unsigned char *b = qemu_plugin_insn_data(insn);
		size_t len = qemu_plugin_insn_size(insn);
		if (len > 16)
			len = 16;
		/* Kept for the life of the run: blocks are few (thousands)
		 * and a callback may run until the exit. */
		char *line = malloc(32 + 2 * len);
		if (!line)
			abort();
		int k = snprintf(line, 32, "I %" PRIx64 " ", qemu_plugin_insn_vaddr(insn));
		for (size_t j = 0; j < len; j++)
			k += snprintf(line + k, 3, "%02x", b ? b[j] : 0);
		line[k++] = '\n';
		line[k] = '\0';
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, CB_NO_REGS, line);
		qemu_plugin_register_vcpu_mem_cb(insn, on_mem, CB_NO_REGS, MEM_RW, NULL);
	}
}

static void on_run_end(plugin_id id, void *udata)
{
	(void)id;
	(void)udata;
	if (out && fclose(out) != 0)
		fputs("qemu_memlog: writing the log failed\n", stderr);
	out = NULL;
}

int qemu_plugin_install(plugin_id id, const struct plugin_info *info, int argc, char **argv)
{
	(void)info;
	const char *path = NULL;
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	if (!path) {
		fputs("qemu_memlog: give the log file as out=FILE\n", stderr);
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	static char buf[1 << 16];
	setvbuf(out, buf, _IOFBF, sizeof buf);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
	qemu_plugin_register_atexit_cb(id, on_run_end, NULL);
	return 0;
}
