#!/bin/sh
# gen_program.sh TOOL PROGRAM PROTOCOL MB OUT - a generated benchmark input:
# `csdec gen` over the recorded run of test program PROGRAM (the ELF, with
# PROGRAM.log next to it; see tests/programs.mk), replayed as often as it
# takes to give at least MB MiB of trace, written as snapshot OUT.
# Configuration as in the TC2 capture: cycle-accurate with timestamps
# (PTM also with the return stack); raw, one source. PROTOCOL ptmplain:
# PTM without any of these (every chunk of it can join the one before);
# ptmfmt: one such source in formatter frames; ptmplain2: two such sources
# (two CPUs), in formatter frames; ptmwhole: as ptmfmt, and in a perf.data
# file all in one AUX buffer. OUT ending in .data: a perf.data file instead
# (`csdec gen --perf-data`; one source: in AUX buffers of 64 KiB, but for
# ptmwhole).
set -eu
tool=$1 prog=$2 proto=$3 mb=$4 out=$5
case $proto in
ptm) opts="--protocol ptm --cycle-accurate --timestamps --return-stack" ;;
etm3) opts="--protocol etm3 --cycle-accurate --timestamps" ;;
ptmplain) opts="--protocol ptm" ;;
ptmfmt) opts="--protocol ptm --formatted" ;;
ptmwhole) opts="--protocol ptm --formatted" ;;
ptmplain2) opts="--protocol ptm --protocol ptm --formatted" ;;
*) echo "gen_program: protocol ptm, ptmplain, ptmfmt, ptmwhole, ptmplain2 or etm3, not $proto" >&2; exit 2 ;;
esac
[ -f "$prog.log" ] || { echo "gen_program: $prog.log missing (make programs)" >&2; exit 2; }
one=$out.one
rm -rf "$one" "$out"
# One run first, to learn how many bytes a run gives.
# shellcheck disable=SC2086
"$tool" gen --qemu-log "$prog.log" --elf "$prog" $opts -o "$one" >/dev/null
bufs=$(awk '/^\[/ { inbuf = tolower($0) ~ /^\[buffer/ } inbuf && /^file[ \t]*=/ { sub(/^file[ \t]*=[ \t]*/, ""); sub(/\r$/, ""); print }' "$one"/*.ini)
size=0
for b in $bufs; do size=$((size + $(wc -c < "$one/$b"))); done
rm -rf "$one"
[ "$size" -gt 0 ] || { echo "gen_program: no trace from one run of $prog" >&2; exit 2; }
want=$((mb * 1024 * 1024))
n=$(( (want + size - 1) / size ))
case $out in
*.data) dest="--perf-data $out" ;;
*) dest="-o $out" ;;
esac
case $out:$proto in
*.data:ptmwhole) dest="$dest --perf-aux-size 4294967296" ;;
esac
# shellcheck disable=SC2086
"$tool" gen --qemu-log "$prog.log" --elf "$prog" $opts --repeat "$n" $dest
echo "gen_program: $out: $(basename "$prog") x $n, $proto"
