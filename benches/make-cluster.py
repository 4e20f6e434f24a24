#!/usr/bin/env python3
"""Writes N node snapshots for benchmarking `topo cluster`, by varying the real
fixtures: the recorded 8x H100 node (3 of 4 nodes) and the ASUS PCIe box (1 of 4),
each with its own host name; every 97th H100 node has an RDMA port down, every
131st an older driver, every 199th two NVLinks of GPU3 inactive.

usage: benches/make-cluster.py OUT_DIR [N] [json|yaml]   (default 4096 json)
"""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
out_dir = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
fmt = sys.argv[3] if len(sys.argv) > 3 else "json"
os.makedirs(out_dir, exist_ok=True)
topo = os.path.join(root, "target", "release", "topo")


def as_json(fixture):
    text = subprocess.run([topo, "snapshot", "--from", fixture, "--format", "json"], capture_output=True,
                          text=True, check=True).stdout
    return json.loads(text)


h100 = as_json(os.path.join(root, "tests/fixtures/snapshots/ibm-gx3d-h100x8-nvml.yaml"))
asus = as_json(os.path.join(root, "tests/fixtures/snapshots/asus-esc8000a-e12.yaml"))
h100_text, asus_text = json.dumps(h100), json.dumps(asus)
old_host_h100 = '"hostname": "%s"' % h100["host"]["hostname"]
old_host_asus = '"hostname": "%s"' % asus["host"]["hostname"]
for i in range(count):
    if i % 4 == 3:
        text = asus_text.replace(old_host_asus, '"hostname": "ada-%05d"' % i)
    else:
        text = h100_text.replace(old_host_h100, '"hostname": "h100-%05d"' % i)
        if i % 97 == 0:
            text = text.replace('"state": "ACTIVE"', '"state": "DOWN"', 1)
        if i % 131 == 0:
            text = text.replace('"driver_version": "550.90.07"', '"driver_version": "535.183.01"')
        if i % 199 == 0:
            node = json.loads(text)
            for link in node["nvml"]["devices"][3]["answers"]["nvlinks"][16:]:
                link["active"] = False
            text = json.dumps(node)
    name = os.path.join(out_dir, "node-%05d.%s" % (i, fmt))
    if fmt == "json":
        with open(name, "w") as f:
            f.write(text)
    else:
        # topo writes its own YAML: the node as JSON first, converted by `topo snapshot`.
        staging = name + ".json.tmp"
        with open(staging, "w") as f:
            f.write(text)
        subprocess.run([topo, "snapshot", "--from", staging, "-o", name], check=True)
        os.remove(staging)
