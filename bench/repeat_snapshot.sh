#!/bin/sh
# repeat_snapshot.sh SRC DST MB - a snapshot directory DST whose trace
# buffers are those of snapshot SRC repeated to exactly MB MiB (cut at a
# multiple of 16 bytes, so formatter frames stay aligned); every other file
# is a symlink to SRC's. The shared captures are only read, never changed.
# MB written Nx (200x): each buffer N times over, whole.
set -eu
src=$1 dst=$2 mb=$3
[ -f "$src/snapshot.ini" ] || { echo "repeat_snapshot: $src is not a snapshot" >&2; exit 2; }
rm -rf "$dst"
mkdir -p "$dst"
for f in "$src"/*; do
	ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$dst/$(basename "$f")"
done
# Buffer files: the file= keys of [buffer...] sections.
bufs=$(awk '/^\[/ { inbuf = tolower($0) ~ /^\[buffer/ } inbuf && /^file[ \t]*=/ { sub(/^file[ \t]*=[ \t]*/, ""); sub(/\r$/, ""); print }' "$src"/*.ini | sort -u)
[ -n "$bufs" ] || { echo "repeat_snapshot: no trace buffer in $src" >&2; exit 2; }
for b in $bufs; do
	rm -f "$dst/$b"
	cp "$src/$b" "$dst/$b.part"
	chmod u+w "$dst/$b.part"
	size=$(wc -c < "$dst/$b.part")
	[ "$size" -gt 0 ] || { echo "repeat_snapshot: $src/$b is empty" >&2; exit 2; }
	case $mb in
	*x) want=$((${mb%x} * size)) ;;
	*) want=$((mb * 1024 * 1024)) ;;
	esac
	while [ "$size" -lt "$want" ]; do
		cat "$dst/$b.part" "$dst/$b.part" > "$dst/$b.tmp"
		mv "$dst/$b.tmp" "$dst/$b.part"
		size=$((size * 2))
	done
	head -c "$want" "$dst/$b.part" > "$dst/$b"
	rm -f "$dst/$b.part"
done
case $mb in *x) echo "repeat_snapshot: $dst (each buffer ${mb%x} times)" ;; *) echo "repeat_snapshot: $dst ($mb MiB per buffer)" ;; esac
