#!/usr/bin/env bash
# `topo cluster` on 4,096 node snapshots made from the real fixtures
# (benches/make-cluster.py): wall time and peak RSS (issue 8 targets: under
# 2 s and under 1 GiB). FORMAT=yaml times YAML snapshots instead of JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
format="${FORMAT:-json}"
dir="${1:-/tmp/topo-bench-cluster-$format}"
cargo build --release --quiet
[ -d "$dir" ] || python3 benches/make-cluster.py "$dir" "${NODES:-4096}" "$format"
files=$(ls "$dir" | wc -l)
bytes=$(du -sb "$dir" | cut -f1)
cat "$dir"/* > /dev/null  # warm the page cache
for run in 1 2 3; do
  /usr/bin/time -f "%e %M" target/release/topo cluster "$dir" --format json 2> /tmp/topo-bench-cluster.time > /tmp/topo-bench-cluster.out
  read -r seconds rss_kb < <(tail -1 /tmp/topo-bench-cluster.time)
  echo "run $run: $files $format snapshots ($((bytes / 1048576)) MiB): ${seconds} s, peak RSS $((rss_kb / 1024)) MiB"
done
