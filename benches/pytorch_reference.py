"""PyTorch's figures for what `topo probe` measures, on the same GPU in the
same run (issue 6's hardware comparison): pinned host<->device copies,
a device-local copy, and torch.distributed all_reduce in one process on
GPU 0 (world size 1: busbw is 0 for one rank, so algbw is what compares). Timed with CUDA events like topo, same sizes and
iteration counts. Prints JSON on stdout.

Usage: python3 pytorch_reference.py [--copy-bytes N] [--iters N] [--warmup N]
"""
import argparse
import json
import os

import torch
import torch.distributed as dist


def timed(fn, iters, warmup, stream=None):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    for _ in range(iters):
        fn()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--copy-bytes", type=int, default=256 << 20)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--sizes", default=",".join(str(1 << s) for s in range(20, 31)))
    args = parser.parse_args()
    n = args.copy_bytes
    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
           "gpus": [], "copies": [], "all_reduce": []}
    for g in range(torch.cuda.device_count()):
        torch.cuda.set_device(g)
        out["gpus"].append(torch.cuda.get_device_name(g))
        host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        host2 = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        dev = torch.empty(n, dtype=torch.uint8, device=g)
        dev2 = torch.empty(n, dtype=torch.uint8, device=g)
        s = torch.cuda.current_stream()
        for kind, fn in [
            ("host_to_device", lambda: dev.copy_(host, non_blocking=True)),
            ("device_to_host", lambda: host2.copy_(dev, non_blocking=True)),
            ("device_local", lambda: dev2.copy_(dev)),
        ]:
            seconds = timed(fn, args.iters, args.warmup, s)
            out["copies"].append({"gpu": g, "kind": kind, "bytes": n, "seconds": seconds, "gbps": n / seconds / 1e9})
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    torch.cuda.set_device(0)
    for size in map(int, args.sizes.split(",")):
        t = torch.ones(size // 4, dtype=torch.float32, device=0)
        seconds = timed(lambda: dist.all_reduce(t), args.iters, args.warmup)
        out["all_reduce"].append({"bytes": size, "seconds": seconds, "algbw_gbps": size / seconds / 1e9})
    dist.destroy_process_group()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
