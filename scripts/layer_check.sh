#!/bin/sh
# layer_check.sh OBJ... - fail if the objects' symbol graph has a cycle.
# Object A uses object B when A has an undefined symbol that B defines
# (nm); the library's layers are one-way (docs/DESIGN.md, "Layers"), so no
# object may reach itself through that relation. Prints each cycle found.
set -eu
[ $# -gt 0 ] || { echo "usage: $0 OBJ..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in "$@"; do
	n=$(basename "$o" .o)
	# Defined global symbols (text, data, bss, read-only, common, weak).
	nm -g --defined-only "$o" | awk -v n="$n" 'NF >= 3 { print $3, n }' >>"$tmp/def"
	nm -g --undefined-only "$o" | awk -v n="$n" '{ print $NF, n }' >>"$tmp/undef"
done
sort -u "$tmp/def" >"$tmp/def.s"
sort -u "$tmp/undef" >"$tmp/undef.s"
# Edges user -> definer, without self edges.
join "$tmp/undef.s" "$tmp/def.s" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$tmp/edges"
# Depth-first search for a back edge; every cycle found is printed.
awk '
{ adj[$1] = adj[$1] " " $2; nodes[$1] = 1; nodes[$2] = 1 }
function visit(v,    k, m, w, i, path) {
	state[v] = 1; stack[++depth] = v
	m = split(adj[v], w, " ")
	for (k = 1; k <= m; k++) {
		if (state[w[k]] == 1) {
			for (i = depth; stack[i] != w[k]; i--) ;
			path = stack[i]
			for (i++; i <= depth; i++) path = path " -> " stack[i]
			print "cycle: " path " -> " w[k]
			bad = 1
		} else if (!state[w[k]])
			visit(w[k])
	}
	depth--; state[v] = 2
}
END {
	for (v in nodes) if (!state[v]) visit(v)
	exit bad
}' "$tmp/edges"
