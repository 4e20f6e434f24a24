#!/usr/bin/env python3
"""Flight Recorder dumps of a large job, built from the real 4-rank dumps.

    python3 benches/make-fr-dumps.py OUT_DIR [RANKS=4096] [ENTRIES=2000] [FORMAT=pickle|json]

Takes rank 0's real JSON dump from tests/fixtures/flight-recorder/healthy (PyTorch 2.15,
gloo) and replicates its entries with increasing sequence ids, record ids and times until
each rank has ENTRIES entries; `pg_config` lists all RANKS ranks. Rank RANKS // 3 stops one
collective early (the others wait in the last one), so the analysis has a hang to find.
Pickles use protocol 2, as PyTorch's C++ pickler writes. Needs only Python's standard library.
"""

import copy
import json
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "tests", "fixtures", "flight-recorder", "healthy", "nccl_trace_rank_0.json")


def main() -> None:
    out = sys.argv[1]
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    entries = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    fmt = sys.argv[4] if len(sys.argv) > 4 else "pickle"
    os.makedirs(out, exist_ok=True)
    real = json.load(open(REAL))
    template = real["entries"]
    base_time = template[0]["time_created_ns"]
    built = []
    for i in range(entries):
        e = copy.deepcopy(template[i % len(template)])
        e["collective_seq_id"] = i + 1
        e["op_id"] = i + 1
        e["record_id"] = i
        e["time_created_ns"] = base_time + i * 5_000_000
        e["retired"] = True
        e["time_discovered_completed_ns"] = None
        e["time_discovered_started_ns"] = None
        e["process_group"] = tuple(e["process_group"])
        built.append(e)
    built[-1]["retired"] = False  # everyone waits in the last collective
    dump = {
        "version": real["version"],
        "comm_lib_version": real.get("comm_lib_version", ""),
        "pg_config": {"": {"name": "", "desc": "", "ranks": str(list(range(ranks)))}},
        "pg_status": {"0": {"last_enqueued_collective": entries, "last_started_collective": -1,
                            "last_completed_collective": entries - 1}},
        "entries": built,
    }
    stuck = ranks // 3
    full = pickle.dumps(dump, protocol=2) if fmt == "pickle" else json.dumps(dump).encode()
    short_dump = dict(dump, entries=built[:-1])
    short_dump["pg_status"] = {"0": {"last_enqueued_collective": entries - 1, "last_started_collective": -1,
                                     "last_completed_collective": entries - 1}}
    short = pickle.dumps(short_dump, protocol=2) if fmt == "pickle" else json.dumps(short_dump).encode()
    suffix = "" if fmt == "pickle" else ".json"
    for r in range(ranks):
        with open(os.path.join(out, f"nccl_trace_rank_{r}{suffix}"), "wb") as f:
            f.write(short if r == stuck else full)
    print(f"{ranks} dumps of {entries} entries ({len(full)} bytes each) in {out}; rank {stuck} stops one short")


if __name__ == "__main__":
    main()
