#!/bin/sh
# gen-snapshots.sh TOOL PROGRAM_DIR OUT_DIR
# The round-trip matrix: every recorded test program run (PROGRAM_DIR/*.log
# next to its ELF) turned by `csdec gen` into snapshots under every trace
# configuration, as OUT_DIR/<program>--<config>/. tests/test_roundtrip.c
# decodes them against the runs, tests/test_ocsd_diff.c against OpenCSD.
set -eu
tool=$1
progs=$2
out=$3
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
for log in "$progs"/*.log; do
	elf=${log%.log}
	name=$(basename "$elf")
	for cfg in ptm ptm-ca ptm-rs etm3 etm3-ca ts multi; do
		case $cfg in
		ptm) opts="--protocol ptm" ;;
		ptm-ca) opts="--protocol ptm --cycle-accurate" ;;
		ptm-rs) opts="--protocol ptm --return-stack --context-id-bytes 4" ;;
		etm3) opts="--protocol etm3 --sync-period 256" ;;
		etm3-ca) opts="--protocol etm3 --cycle-accurate --context-id-bytes 1" ;;
		ts) opts="--protocol ptm --protocol etm3 --cycle-accurate --timestamps --formatted --trace-id 0x20" ;;
		multi) opts="--protocol ptm --protocol etm3 --protocol ptm --return-stack --formatted=port" ;;
		esac
		# shellcheck disable=SC2086
		"$tool" gen --qemu-log "$log" --elf "$elf" $opts -o "$out.tmp/$name--$cfg" 2>/dev/null
	done
done
rm -rf "$out"
mv "$out.tmp" "$out"
