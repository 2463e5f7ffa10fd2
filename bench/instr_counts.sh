#!/bin/sh
# instr_counts.sh BINDIR NAME=DIR... - `make bench-instr`: instructions
# executed by the decode loop (bench_decode_loop of csdec_bench and
# ocsd_bench, counted by valgrind's callgrind and nothing else of the
# process), csdec against OpenCSD, flow and packets on each snapshot.
# Prints a markdown table. An instruction count does not depend on the
# host or on what else runs there, which a time does: where the core's
# issue width is shared (another thread on the same core, a busy host),
# the time ratio of two decoders tends towards their instruction ratio,
# because the one that runs more instructions per cycle loses the most.
set -eu
bin=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# instructions of one harness's decode loop on one input
count() {
	valgrind --tool=callgrind --collect-atstart=no --toggle-collect=bench_decode_loop \
	  --callgrind-out-file="$tmp/cg.out" "$bin/$1" "$2" "$3" >"$tmp/res" 2>"$tmp/log" || {
		echo "instr_counts: $1 $2 $3 failed:" >&2; cat "$tmp/log" >&2; exit 2; }
	n=$(sed -n 's/^summary: *//p' "$tmp/cg.out")
	[ -n "$n" ] || { echo "instr_counts: no count from $1 $2 $3" >&2; exit 2; }
	echo "$n"
}

echo "| input | what | bytes | csdec instructions | per byte | OpenCSD instructions | per byte | OpenCSD / csdec |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for arg in "$@"; do
	name=${arg%%=*}
	dir=${arg#*=}
	for mode in flow packets; do
		c=$(count csdec_bench "$mode" "$dir")
		bytes=$(sed -n 's/.* bytes=\([0-9]*\) .*/\1/p' "$tmp/res")
		o=$(count ocsd_bench "$mode" "$dir")
		what=$( [ "$mode" = flow ] && echo "flow decode" || echo "packets only")
		awk -v n="$name" -v w="$what" -v b="$bytes" -v c="$c" -v o="$o" 'BEGIN {
			printf "| %s | %s | %d | %.1f M | %.1f | %.1f M | %.1f | **%.1fx** |\n",
			       n, w, b, c / 1e6, c / b, o / 1e6, o / b, o / c }'
	done
done
