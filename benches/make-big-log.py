#!/usr/bin/env python3
"""Writes a large NCCL log the way a long job produces one, for benchmarking `topo nccl`.

The init sections of the real 8-rank, 4-node log (tests/fixtures/nccl-logs/044-*) are
repeated for a bounded set of hosts and ranks, then millions of COLL lines follow, as
NCCL_DEBUG_SUBSYS=COLL prints them (format of tests/fixtures/nccl-logs/035-*), with
varying operations, sizes, opCounts, processes, communicators and buffers. Never
commit the output.

usage: benches/make-big-log.py OUT [SIZE_GIB]   (default 1.0)
"""
import glob
import os
import random
import sys

here = os.path.dirname(os.path.abspath(__file__))
fixtures = os.path.join(here, "..", "tests", "fixtures", "nccl-logs")
out_path = sys.argv[1]
target = int(float(sys.argv[2] if len(sys.argv) > 2 else "1.0") * (1 << 30))

init = open(glob.glob(os.path.join(fixtures, "044-*.log"))[0], "rb").read()
ranks = [("gpu34", 34088, 0), ("gpu34", 34089, 1), ("gpu36", 20775, 0), ("gpu36", 20776, 1),
         ("gpu40", 9455, 0), ("gpu40", 9456, 1), ("gpu41", 3928, 0), ("gpu41", 3929, 1)]
ops = [("AllReduce", 7), ("AllGather", 7), ("ReduceScatter", 7), ("Broadcast", 6), ("AllReduce", 9)]
random.seed(42)

# As in a real training job (tests/fixtures/nccl-logs/037-*): each thread drives two
# communicators (a data-parallel one for AllReduce, a sharding one for AllGather and
# ReduceScatter), each with its own stream, and the buffers come from a caching
# allocator's pool, so they change from call to call.
pools = {pid: [f"0x7f{random.getrandbits(24):06x}0000" for _ in range(24)] for _, pid, _ in ranks}

with open(out_path, "wb") as out:
    out.write(init)
    block = []
    op_count = 0
    for i in range(20000):
        host, pid, dev = ranks[i % len(ranks)]
        op, dtype = ops[(i // len(ranks)) % len(ops)]
        count = random.choice([1, 256, 4096, 65536, 1 << 20, 7382228, 25503912])
        if i % len(ranks) == 0:
            op_count += 1
        sharding = op in ("AllGather", "ReduceScatter")
        comm = f"0x7f3720{'06' if sharding else '05'}a2{dev}0"
        stream = f"0x561c1ee8{'e0' if sharding else 'df'}b0"
        send = random.choice(pools[pid])
        recv = send if op == "AllReduce" else random.choice(pools[pid])
        block.append(
            f"{host}:{pid}:{pid + 17} [{dev}] NCCL INFO {op}: opCount {op_count:x} sendbuff {send} "
            f"recvbuff {recv} count {count} datatype {dtype} op 0 root 0 comm {comm} "
            f"[nranks=8] stream {stream}\n")
    chunk = "".join(block).encode()
    written = len(init)
    while written < target:
        out.write(chunk)
        written += len(chunk)
print(f"wrote {written / (1 << 30):.2f} GiB to {out_path}")
