#!/bin/sh
# jobs_scaling.sh TOOL ROUNDS NAME=DIR:[COMMAND/]FORMAT... - the `--jobs` row of
# `make bench`: the whole tool (`csdec COMMAND DIR --format FORMAT`, COMMAND
# decode unless given, output to a file) with --jobs 1 and --jobs 2, paired runs alternating which goes
# first, wall time of each; prints a markdown table with the median of
# each, their ratio, whether every run's output was the same, and the load
# average before and after (the machine may be busy with other work).
# BENCH_PREFIX, if set, is put before each run (e.g. `chrt -f 10`, so that
# other work on a shared host does not take the cores from the runs).
set -eu
tool=$1
rounds=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }

# wall seconds of one run; its output's checksum in $tmp/sum.$2
timed() {
	t0=$(now)
	# shellcheck disable=SC2086
	case $3 in
	*/*) cmd=${3%%/*} f=${3#*/} ;;
	*) cmd=decode f=$3 ;;
	esac
	${BENCH_PREFIX:-} "$tool" "$cmd" "$1" --format "$f" --jobs "$2" >"$tmp/out" 2>/dev/null || true
	t1=$(now)
	cksum <"$tmp/out" | cut -d' ' -f1 >"$tmp/sum.$2"
	echo "$t1 - $t0" | bc -l
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "| input | format | --jobs 1 (s, median) | --jobs 2 (s, median) | speedup | same output | load before / after |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for spec in "$@"; do
	name=${spec%%=*}
	rest=${spec#*=}
	dir=${rest%:*}
	fmt=${rest##*:}
	load0=$(cut -d' ' -f1 /proc/loadavg)
	: >"$tmp/t1"
	: >"$tmp/t2"
	same=yes
	r=0
	while [ "$r" -lt "$rounds" ]; do
		if [ $((r % 2)) -eq 0 ]; then
			timed "$dir" 1 "$fmt" >>"$tmp/t1"
			timed "$dir" 2 "$fmt" >>"$tmp/t2"
		else
			timed "$dir" 2 "$fmt" >>"$tmp/t2"
			timed "$dir" 1 "$fmt" >>"$tmp/t1"
		fi
		cmp -s "$tmp/sum.1" "$tmp/sum.2" || same=no
		r=$((r + 1))
	done
	m1=$(median <"$tmp/t1")
	m2=$(median <"$tmp/t2")
	load1=$(cut -d' ' -f1 /proc/loadavg)
	printf '| %s | %s | %.3f | %.3f | %.2fx | %s | %s / %s |\n' "$name" "$fmt" "$m1" "$m2" \
		"$(echo "$m1 / $m2" | bc -l)" "$same" "$load0" "$load1"
done
