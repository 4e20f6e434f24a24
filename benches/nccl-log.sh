#!/usr/bin/env bash
# Throughput and peak memory of `topo nccl` on a >= 1 GiB log, against
# `grep -c "NCCL INFO"` on the same file in the same run (issue 4 targets:
# >= 1 GB/s, at least half grep's throughput, peak RSS under 64 MB), and
# `topo diagnose` on it against `topo nccl` (issue 5 target: within 1.2x).
set -euo pipefail
cd "$(dirname "$0")/.."
log="${1:-/tmp/topo-bench-nccl.log}"
# (Re)made when missing or older than its generator.
if [ ! -f "$log" ] || [ benches/make-big-log.py -nt "$log" ]; then
  python3 benches/make-big-log.py "$log" "${SIZE_GIB:-1.0}"
fi
cargo build --release --quiet
bytes=$(stat -c %s "$log")
cat "$log" > /dev/null  # warm the page cache for both tools
# The fastest of seven runs of each, the three tools taken in turn each round:
# this VM's timings swing by 20 %, and in turn no tool gets the quiet moments.
seconds() {
  local start end
  start=$(date +%s.%N); "$@" > /dev/null; end=$(date +%s.%N)
  echo "$end - $start" | bc
}
min() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
grep_s="" topo_s="" diagnose_s=""
for _ in 1 2 3 4 5 6 7; do
  grep_s=$(min "$grep_s" "$(seconds sh -c "grep -c \"NCCL INFO\" \"$log\" > /tmp/topo-bench-grep.out")")
  topo_s=$(min "$topo_s" "$(seconds target/release/topo nccl "$log" --format json)")
  diagnose_s=$(min "$diagnose_s" "$(seconds target/release/topo diagnose --log-only "$log" --format json)")
done
# Peak RSS: the median of five runs. Most of it is the binary's own pages,
# which the kernel maps in 64 KiB fault-around blocks, so one run swings by
# half a MiB. BASELINE=path/to/an/older/topo measures that build alike, in
# the same run, for a ratio that does not depend on the machine's state.
peak_rss_kb() {
  for _ in 1 2 3 4 5; do
    { /usr/bin/time -f "%M" "$1" nccl "$log" --format json > /dev/null; } 2>&1 | tail -1
  done | sort -n | sed -n 3p
}
rss_kb=$(peak_rss_kb target/release/topo)
base_s="" base_rss_kb=0
if [ -n "${BASELINE:-}" ]; then
  for _ in 1 2 3 4 5 6 7; do
    base_s=$(min "$base_s" "$(seconds "$BASELINE" nccl "$log" --format json)")
  done
  base_rss_kb=$(peak_rss_kb "$BASELINE")
fi
python3 - "$bytes" "$grep_s" "$topo_s" "$rss_kb" "$diagnose_s" "${base_s:-0}" "$base_rss_kb" <<'PY'
import sys
size, grep_s, topo_s, rss = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
diagnose_s, base_s, base_rss = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
print(f"log: {size / 1e9:.2f} GB")
print(f"grep -c 'NCCL INFO': {grep_s:.2f} s = {size / grep_s / 1e9:.2f} GB/s")
print(f"topo nccl:           {topo_s:.2f} s = {size / topo_s / 1e9:.2f} GB/s  ({grep_s / topo_s:.2f}x grep's throughput)")
print(f"topo nccl peak RSS:  {rss / 1024:.1f} MiB (median of 5)")
print(f"topo diagnose:       {diagnose_s:.2f} s = {diagnose_s / topo_s:.2f}x topo nccl's time")
if base_s:
    print(f"baseline topo nccl:  {base_s:.2f} s, peak RSS {base_rss / 1024:.1f} MiB"
          f"  (this build: {base_s / topo_s:.2f}x its throughput, {rss / base_rss:.2f}x its memory)")
PY
