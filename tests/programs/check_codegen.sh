#!/bin/sh
# check_codegen.sh DIR - proves that the compiler emitted what each test
# program is there for (README.md), by disassembling the objects in DIR
# (build/programs, from `make programs-check`): only the program's own code
# is in an object, so libc's tables and IT blocks cannot stand in for it.
# Veneers are made by the linker, so they are looked up in the ELF.
set -u
dir=$1
OBJDUMP=${OBJDUMP:-arm-linux-gnueabihf-objdump}
NM=${NM:-arm-linux-gnueabihf-nm}
READELF=${READELF:-arm-linux-gnueabihf-readelf}
failed=0
checked=0

pass() { checked=$((checked + 1)); }
fail() { checked=$((checked + 1)); failed=$((failed + 1)); echo "FAIL $*"; }

# has FILE ERE WHAT: the disassembly of FILE matches ERE
has() {
	if $OBJDUMP -d "$dir/$1" | grep -Eq -- "$2"; then pass; else fail "$1: $3 (no /$2/)"; fi
}

# count_at_least FILE ERE N WHAT: at least N disassembly lines match ERE
count_at_least() {
	n=$($OBJDUMP -d "$dir/$1" | grep -Ec -- "$2")
	if [ "$n" -ge "$3" ]; then pass; else fail "$1: $4 ($n lines match /$2/, want >= $3)"; fi
}

# symbol FILE NAME WHAT: the ELF defines the symbol
symbol() {
	if $NM "$dir/$1" | grep -Eq -- " $2\$"; then pass; else fail "$1: $3 (no symbol $2)"; fi
}

# mapping FILE KIND WHAT: the object has a $a / $t mapping symbol
mapping() {
	if $READELF -s "$dir/$1" | grep -Eq -- " \\\$$2(\\..*)?\$"; then pass; else fail "$1: $3 (no \$$2)"; fi
}

# no_undefined FILE WHAT: the ELF needs nothing from outside its source
no_undefined() {
	if [ -z "$($NM -u "$dir/$1")" ]; then pass; else fail "$1: $2 (undefined symbols)"; fi
}

S='[[:space:]]'
for o in O0 O2; do
	# jump tables
	has switch-arm-$o.o "${S}ldrls${S}+pc, \\[pc, r[0-9]+, lsl #2\\]" "LDR pc jump table"
	has indirect-arm-$o.o "${S}addls${S}+pc, pc, r[0-9]+, lsl #2" "ADD pc jump table"
	has bare_mix-arm-$o.o "${S}addls${S}+pc, pc, r[0-9]+, lsl #2" "ADD pc jump table"
	# indirect calls and returns
	for isa in arm thumb; do
		has indirect-$isa-$o.o "${S}blx${S}+r[0-9]" "call through a function pointer"
		has bare_mix-$isa-$o.o "${S}blx${S}+r[0-9]" "call through a function pointer"
		has interwork-$isa-$o.o "${S}blx${S}+r[0-9]" "call through a function pointer"
		has recurse-$isa-$o.o "${S}(pop|ldm[a-z]*)${S}.*pc\\}" "return by POP/LDM pc"
		mapping interwork-$isa-$o.o a "ARM code"
		mapping interwork-$isa-$o.o t "Thumb code"
		mapping bare_mix-$isa-$o.o a "ARM code"
		mapping bare_mix-$isa-$o.o t "Thumb code"
		no_undefined bare-$isa-$o "no library code"
		no_undefined bare_mix-$isa-$o "no library code"
	done
	# conditional returns, calls and branches of itblock's assembly
	has itblock-arm-$o.o "${S}(popgt|ldmgt)${S}" "conditional return"
	has itblock-arm-$o.o "${S}blxne${S}+r[0-9]" "conditional call through a register"
	has itblock-thumb-$o.o "${S}popgt${S}+\\{r4, pc\\}" "conditional return in an IT block"
	has itblock-thumb-$o.o "${S}blxne${S}+r[0-9]" "conditional BLX in an IT block"
	has itblock-thumb-$o.o "${S}blt(\\.n)?${S}" "conditional branch in an IT block"
	for it in ite itet itttt iteee itt it ittet; do
		has itblock-thumb-$o.o "${S}$it${S}" "IT block $it"
	done
done
has switch-thumb-O0.o "${S}ldr\\.w${S}+pc, \\[r[0-9]+, r[0-9]+, lsl #2\\]" "LDR pc jump table"
has switch-thumb-O2.o "${S}tbb${S}" "TBB jump table"
has switch-thumb-O2.o "${S}tbh${S}" "TBH jump table"
has indirect-thumb-O0.o "${S}bx${S}+r[0-9]" "computed jump (table of offsets)"
has indirect-thumb-O2.o "${S}tbb${S}" "TBB jump table"
has bare_mix-thumb-O2.o "${S}tbb${S}" "TBB jump table"
# itblock.c's assembly has 8 IT instructions; more come from GCC's C code
count_at_least itblock-thumb-O2.o "${S}it[te]*${S}" 12 "IT blocks from C code"
# tail calls into the other instruction set go through linker veneers
for isa in arm thumb; do
	symbol interwork-$isa-O2 __a_tail_to_t_from_thumb "ARM tail call from Thumb via a veneer"
	symbol interwork-$isa-O2 __t_tail_to_a_from_arm "Thumb tail call from ARM via a veneer"
done

echo "check_codegen: $checked checks, $failed failed"
[ "$failed" -eq 0 ]
