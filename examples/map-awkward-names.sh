#!/usr/bin/env bash
# `opq map` over files whose names break naive scripts: spaces, quotes, $, *, a leading dash,
# a newline, non-ASCII. Each file is compressed and checksummed by its own operation, with the name
# passed as one argv element (no shell, nothing interpreted), two at a time on a private local cluster.
#
#   examples/map-awkward-names.sh          # uses .build/release/opq (or opq on PATH)
#
# Exits 0 when every file was compressed, verified and checksummed under its exact name.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
opq="${OPQ:-$here/.build/release/opq}"
[ -x "$opq" ] || opq="$(command -v opq)" || { echo "build opq first: swift build -c release" >&2; exit 2; }
opq="$(cd "$(dirname "$opq")" && pwd)/$(basename "$opq")"

work="$(mktemp -d "${TMPDIR:-/tmp}/opq-map-example.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir in
names=("plain.txt" "with space.txt" "it's quoted.txt" 'double"quote.txt' '$HOME and $(date).txt'
       '*.txt' '-rf' 'semi;colon & amp.txt' $'new\nline.txt' 'ünïcödé 日本.txt')
for name in "${names[@]}"; do
    seq 1 20000 | sed "s|^|$RANDOM |" > "in/$name"
done

# -0: NUL-separated names (find -print0), so even the newline in a name is safe.
# {} is the file; {/} its base name: `gzip -k` keeps the original beside the .gz.
find in -type f -print0 | "$opq" map -0 --local 2 -- gzip -k -9 -- {}
find in -type f -name '*.gz' -print0 | "$opq" map -0 --local 2 --shell -- 'gzip -t {} && sha256sum {} > {}.sha256'

count=$(find in -type f -name '*.gz.sha256' -printf x | wc -c)   # -printf: a name may hold a newline
echo "compressed, verified and checksummed: $count of ${#names[@]} files"
for name in "${names[@]}"; do
    [ -f "in/$name.gz" ] && [ -f "in/$name.gz.sha256" ] || { echo "missing: in/$name.gz" >&2; exit 1; }
done
[ "$count" -eq "${#names[@]}" ]
