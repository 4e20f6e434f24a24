#!/usr/bin/env bash
# `topo diagnose` on the Flight Recorder dumps of a 4,096-rank job, 2,000 entries
# per rank (built from the real dumps by make-fr-dumps.py; one rank stops one
# collective short), against the issue 16 targets: under 5 s and under 1 GiB.
#   benches/flight-recorder.sh [DIR] [RANKS] [ENTRIES] [pickle|json]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-/tmp/topo-bench-fr}"
ranks="${2:-4096}" entries="${3:-2000}" format="${4:-pickle}"
if [ ! -d "$dir" ] || [ benches/make-fr-dumps.py -nt "$dir" ]; then
  rm -rf "$dir"
  python3 benches/make-fr-dumps.py "$dir" "$ranks" "$entries" "$format"
fi
cargo build --release --quiet --bin topo
du -sh "$dir"
cat "$dir"/* > /dev/null  # warm the page cache
best=""
for _ in 1 2 3; do
  out=$( { /usr/bin/time -f "%e %M" target/release/topo diagnose --log-only "$dir" --format json > /tmp/topo-bench-fr.json; } 2>&1 | tail -1)
  echo "run: ${out% *} s, peak RSS $(( ${out#* } / 1024 )) MiB"
  s=${out% *}
  if [ -z "$best" ] || [ "$(echo "$s < $best" | bc)" = 1 ]; then best=$s; fi
done
echo "best: $best s"
python3 -c "import json; f = json.load(open('/tmp/topo-bench-fr.json'))[0]; print(f['code'], 'first rank named:', f['ranks'][0])"
