#!/usr/bin/env python3
"""A hostile NCCL log for the memory benchmark: N lines that each name a new
host, process, communicator, warning text, ring edge, tree entry or
connection, so every per-entity table of the reader grows as fast as it can.

    make-hostile-log.py LINES > FILE
"""
import sys
n = int(sys.argv[1])
out = sys.stdout
kinds = 6
for i in range(n):
    k = i % kinds
    if k == 0:
        out.write(f"host{i}:{i}:{i} [0] NCCL INFO Channel {i%64:02d}/0 : {i} -> {i+1} via P2P/IPC\n")
    elif k == 1:
        out.write(f"host{i%100000}:{i}:{i} [0] misc/x.cc:{i} NCCL WARN distinct warning number {i}\n")
    elif k == 2:
        out.write(f"h:{i%50000}:{i} [0] NCCL INFO Ring {i%64:02d} : {i} -> {i+1} -> {i+2}\n")
    elif k == 3:
        out.write(f"h:{i%50000}:{i} [0] NCCL INFO comm 0x{i:x} rank {i%1000} nranks 1000 cudaDev 0 busId 1000 commId 0x{i:x} - Init START\n")
    elif k == 4:
        out.write(f"h:1:1 [0] NCCL INFO Trees [{i%64}] {i}/-1/-1->{i+1}->{i+2}\n")
    else:
        out.write(f"h{i}:{i}:{i} [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x1 recvbuff 0x2 count 10 datatype 7 op 0 root 0 comm 0x{i:x} [nranks=8] stream 0x1\n")
