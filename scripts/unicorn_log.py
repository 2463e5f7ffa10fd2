#!/usr/bin/python3
"""unicorn_log.py - run a bare-metal ARM/Thumb ELF under Unicorn and write
the execution log `csdec gen --exec-log` reads: one "I <pc> A32|T32" line
per executed instruction, then one "R|W <addr> <size> <value>" line per
data access it made (memory hooks), in order.

    unicorn_log.py ELF LOG [--max N]

The program's PT_LOAD segments are loaded, memory below 1 MiB and at the
section .far is mapped, execution starts at the ELF entry and stops at the
symbol csd_done (or after N instructions, default 10^6).

Unicorn (QEMU) performs a store-exclusive as an atomic compare-and-swap,
whose read the memory hook reports too; the architecture (and an ETM)
sees only the store, so that read is left out of the log."""
import struct
import sys

import unicorn
from unicorn import arm_const as A


def elf_info(data):
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        raise SystemExit("not a 32-bit little-endian ELF")
    (e_entry, e_phoff, e_shoff) = struct.unpack_from("<III", data, 24)
    (e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx) = struct.unpack_from("<HHHHH", data, 42)
    segs = []
    for i in range(e_phnum):
        p_type, p_offset, p_vaddr, _, p_filesz, p_memsz = struct.unpack_from("<IIIIII", data, e_phoff + i * e_phentsize)
        if p_type == 1:
            segs.append((p_vaddr, data[p_offset:p_offset + p_filesz], p_memsz))
    syms = {}
    sections = []
    for i in range(e_shnum):
        sh = struct.unpack_from("<IIIIIIIIII", data, e_shoff + i * e_shentsize)
        sections.append(sh)
    for sh in sections:
        if sh[1] == 2:  # SHT_SYMTAB
            strtab = sections[sh[6]]
            for k in range(sh[5] // 16):
                st_name, st_value, _, _, _, _ = struct.unpack_from("<IIIBBH", data, sh[4] + 16 * k)
                s = data[strtab[4] + st_name:data.index(b"\0", strtab[4] + st_name)].decode()
                syms[s] = st_value
    return e_entry, segs, syms


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    elf, log = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--max" else 1000000
    data = open(elf, "rb").read()
    entry, segs, syms = elf_info(data)
    uc = unicorn.Uc(unicorn.UC_ARCH_ARM, unicorn.UC_MODE_ARM)
    uc.mem_map(0, 0x100000)
    uc.mem_map(0x00c00000, 0x10000)
    for vaddr, body, _ in segs:
        uc.mem_write(vaddr, bytes(body))
    out = open(log, "w")
    out.write("# %s under Unicorn %s\n" % (elf.split("/")[-1], unicorn.__version__))
    count = [0]
    in_strex = [False]

    def is_strex(u, addr, thumb):
        b = bytes(u.mem_read(addr, 4))
        if not thumb:
            w = int.from_bytes(b, "little")
            return (w & 0x0F9000F0) == 0x01800090 and (w >> 28) != 0xF
        hw1, hw2 = int.from_bytes(b[:2], "little"), int.from_bytes(b[2:], "little")
        return hw1 & 0xFFF0 == 0xE840 or (hw1 & 0xFFF0 == 0xE8C0 and (hw2 >> 4) & 0xF in (4, 5, 7))

    def on_code(u, addr, size, _):
        t = u.reg_read(A.UC_ARM_REG_CPSR) & 0x20
        in_strex[0] = is_strex(u, addr, t)
        out.write("I %x %s\n" % (addr, "T32" if t else "A32"))
        count[0] += 1
        if count[0] >= limit:
            u.emu_stop()

    def on_mem(u, access, addr, size, value, _):
        if access == unicorn.UC_MEM_READ:
            if in_strex[0]:
                return
            value = int.from_bytes(u.mem_read(addr, size), "little")
            out.write("R %x %d %x\n" % (addr, size, value))
        else:
            out.write("W %x %d %x\n" % (addr, size, value & ((1 << (8 * size)) - 1)))

    uc.hook_add(unicorn.UC_HOOK_CODE, on_code)
    uc.hook_add(unicorn.UC_HOOK_MEM_READ | unicorn.UC_HOOK_MEM_WRITE, on_mem)
    uc.emu_start(entry, syms["csd_done"])
    out.close()


main()
