#!/usr/bin/env bash
# Issue 6's hardware run, in one call on a GPU machine: `topo probe --full`
# and the same measurements in PyTorch, then a table with the ratios.
# Build `topo` elsewhere (release) and carry it; needs python3 with torch.
#   benches/probe-vs-pytorch.sh ./target/release/topo OUTDIR
set -euo pipefail
topo=${1:-./target/release/topo}
out=${2:-probe-vs-pytorch}
mkdir -p "$out"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
nvidia-smi topo -m > "$out/nvidia-smi-topo-m.txt" 2>&1 || true
nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1 || true
# Quick mode, timed as a user runs it.
start=$(date +%s.%N)
"$topo" probe > "$out/topo-probe-quick.txt" 2> "$out/topo-probe-quick.stderr" || echo "quick exit $?" >> "$out/topo-probe-quick.stderr"
end=$(date +%s.%N)
echo "topo probe (quick): $(echo "$end - $start" | bc) s" | tee "$out/quick-seconds.txt"
"$topo" probe --full --format json --save "$out/snapshot.yaml" > "$out/topo-probe-full.json" 2> "$out/topo-probe-full.stderr" || true
"$topo" probe --full > "$out/topo-probe-full.txt" 2>&1 || true
python3 "$(dirname "$0")/pytorch_reference.py" --iters 20 --warmup 5 > "$out/pytorch.json"
python3 - "$out/topo-probe-full.json" "$out/pytorch.json" <<'PY' | tee "$out/comparison.txt"
import json, sys
topo = json.load(open(sys.argv[1]))["probe"]
torch = json.load(open(sys.argv[2]))
print(f"{'measurement':<28} {'topo GB/s':>10} {'PyTorch GB/s':>13} {'topo/PyTorch':>13} {'expected':>9} {'topo/exp':>9}")
for ref in torch["copies"]:
    mine = next((c for c in topo["copies"] if c["kind"] == ref["kind"] and c["gpu"] == ref["gpu"] and "peer" not in c), None)
    if not mine:
        continue
    got = mine["bandwidth"] / 1e9
    exp = mine.get("expected")
    print(f"GPU {ref['gpu']} {ref['kind']:<22} {got:>10.1f} {ref['gbps']:>13.1f} {got / ref['gbps']:>13.3f} "
          f"{(exp or 0) / 1e9:>9.1f} {(got * 1e9 / exp if exp else float('nan')):>9.2f}")
ar = next((c for c in topo["collectives"] if c["collective"] == "all_reduce"), None)
for ref in torch["all_reduce"]:
    row = next((r for r in (ar or {}).get("rows", []) if r["bytes"] == ref["bytes"]), None)
    if row:
        got = row["algbw"] / 1e9
        print(f"all_reduce {ref['bytes']:>12} B algbw {got:>10.1f} {ref['algbw_gbps']:>13.1f} {got / ref['algbw_gbps']:>13.3f}")
PY
