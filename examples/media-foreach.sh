#!/usr/bin/env bash
# Runs examples/media-foreach.yaml on four generated WAVs in a fresh directory (printed first), then
# prints the index it wrote. Needs sox and flac (apt-get install sox flac). OPQ=path/to/opq overrides opq.
set -euo pipefail
opq=${OPQ:-opq}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/opq-media.XXXXXX")
echo "working in $work"
cd "$work"
mkdir -p wav flac png
for pitch in 220 330 440 550; do sox -n -r 16000 -b 16 "wav/tone-$pitch.wav" synth 1 sine "$pitch"; done
"$opq" run "$here/media-foreach.yaml" --slots 2
cat index.txt
