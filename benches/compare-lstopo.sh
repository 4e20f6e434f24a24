#!/usr/bin/env bash
# Times the live `topo show --plain` against hwloc's `lstopo-no-graphics` on this
# machine, in the same run (issue 2 target: topo at most 0.2x lstopo's wall time).
# Needs: hyperfine and hwloc (Debian: apt-get install hyperfine hwloc).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
for tool in hyperfine lstopo-no-graphics; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install hyperfine hwloc)" >&2; exit 2; }
done
hyperfine --warmup 5 --runs "${RUNS:-50}" -N --export-json "${OUT:-/tmp/topo-vs-lstopo.json}" \
  'target/release/topo show --plain' \
  'lstopo-no-graphics' \
  'lstopo-no-graphics --whole-io'
python3 - "${OUT:-/tmp/topo-vs-lstopo.json}" <<'PY'
import json, sys
results = {r["command"]: r["mean"] for r in json.load(open(sys.argv[1]))["results"]}
topo = results["target/release/topo show --plain"]
for name, mean in results.items():
    print(f"{name:40s} {mean*1000:8.2f} ms  (topo/this = {topo/mean:.3f})")
PY
