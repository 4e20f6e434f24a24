#!/usr/bin/env bash
# Peak memory of `topo nccl` on hostile logs of growing size (issue 18, item 2):
# every line names a new host, process, communicator, warning, ring edge, tree
# entry or connection. The reader's tables have caps over the whole input, so
# peak RSS must stay flat from ~100 MB of log to the largest size given
# (default 1 GB; SIZES="1000000 10000000 40000000" for ~4 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
dir="${TMPDIR:-/tmp}/topo-hostile"
mkdir -p "$dir"
for lines in ${SIZES:-1000000 4000000 10000000}; do
  log="$dir/hostile-$lines.log"
  [ -f "$log" ] || python3 benches/make-hostile-log.py "$lines" > "$log"
  bytes=$(stat -c %s "$log")
  out=$( { /usr/bin/time -f "%M %e" target/release/topo nccl "$log" --format json > /dev/null; } 2>&1 | tail -1)
  read -r rss secs <<< "$out"
  printf '%6.2f GB log: peak RSS %6.1f MiB, %5.1f s\n' "$(echo "$bytes / 1000000000" | bc -l)" "$(echo "$rss / 1024" | bc -l)" "$secs"
done
