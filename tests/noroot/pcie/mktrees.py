#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Generate the fake sysfs/proc trees under tests/noroot/pcie/trees/ (committed; rerun after edits).

Each tree mimics /sys: devices/pci0000:00/<root port>/<...>/<gpu> directories holding the
attribute files, and bus/pci/devices/<bdf> relative symlinks into them, so that realpath()
gives the bridge chain exactly as on a real machine.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "trees")

G = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
     5: "32.0 GT/s PCIe"}
OLD = {1: "2.5 GT/s", 2: "5 GT/s", 3: "8 GT/s", 4: "16 GT/s"}

BRIDGE = dict(vendor="0x8086", device="0x1234", cls="0x060400")
GPU = dict(vendor="0x10de", device="0x2335", cls="0x030200")   # 3D controller
VGA = dict(vendor="0x10de", device="0x2684", cls="0x030000")   # VGA controller
AUDIO = dict(vendor="0x10de", device="0x22ba", cls="0x040300")  # GPU's HDMI audio fn


def dev(ident, cur, curw, mx, mxw, fmt=G, numa=None, cpus=None):
    d = {"vendor": ident["vendor"], "device": ident["device"], "class": ident["cls"]}
    if cur is not None:
        d.update(current_link_speed=cur if isinstance(cur, str) else fmt[cur],
                 current_link_width=str(curw),
                 max_link_speed=mx if isinstance(mx, str) else fmt[mx],
                 max_link_width=str(mxw))
    if numa is not None:
        d["numa_node"] = str(numa)
    if cpus is not None:
        d["local_cpulist"] = cpus
    return d


def tree(name, devices):
    """devices: list of (path under devices/, attrs). Path like pci0000:00/0000:00:01.0/..."""
    root = os.path.join(OUT, name)
    shutil.rmtree(root, ignore_errors=True)
    links = os.path.join(root, "bus", "pci", "devices")
    os.makedirs(links)
    for path, attrs in devices:
        d = os.path.join(root, "devices", path)
        os.makedirs(d, exist_ok=True)
        for k, v in attrs.items():
            with open(os.path.join(d, k), "w") as f:
                f.write(v + "\n")
        bdf = os.path.basename(path)
        os.symlink(os.path.relpath(d, links), os.path.join(links, bdf))


RP = "pci0000:00/0000:00:01.0"
NUMA0 = dict(numa=0, cpus="0-3")


def main():
    # (a) idle: Gen4 x16 card and slot, link downclocked to Gen1 (docs/cases.md #24)
    tree("idle_gen1", [
        (RP, dev(BRIDGE, 1, 16, 4, 16)),
        (RP + "/0000:01:00.0", dev(GPU, 1, 16, 4, 16, **NUMA0)),
        (RP + "/0000:01:00.1", dev(AUDIO, 1, 16, 4, 16)),
    ])
    # (a') the same machine busy: Gen4 x16
    tree("busy_gen4", [
        (RP, dev(BRIDGE, 4, 16, 4, 16)),
        (RP + "/0000:01:00.0", dev(GPU, 4, 16, 4, 16, **NUMA0)),
    ])
    # (b) riser: x8 on an x16 card in an x16 slot (docs/cases.md #25)
    tree("riser_x8", [
        (RP, dev(BRIDGE, 4, 8, 4, 16)),
        (RP + "/0000:01:00.0", dev(VGA, 4, 8, 4, 16, **NUMA0)),
    ])
    # (c) switch: root port -> switch upstream port trained at Gen4 x4; the switch
    # downstream ports and both GPUs look perfect (docs/cases.md #25, HGX-style)
    sw = RP + "/0000:01:00.0"
    tree("switch_x4", [
        (RP, dev(BRIDGE, 4, 4, 4, 16)),
        (sw, dev(BRIDGE, 4, 4, 4, 16)),
        (sw + "/0000:02:00.0", dev(BRIDGE, 4, 16, 4, 16)),
        (sw + "/0000:02:00.0/0000:03:00.0", dev(GPU, 4, 16, 4, 16, numa=1, cpus="4-7")),
        (sw + "/0000:02:01.0", dev(BRIDGE, 4, 16, 4, 16)),
        (sw + "/0000:02:01.0/0000:04:00.0", dev(GPU, 4, 16, 4, 16, numa=1, cpus="4-7")),
    ])
    # (d) both speed formats: pre-5.6 "8 GT/s" on the root port, "8.0 GT/s PCIe" on the GPU
    tree("old_format", [
        (RP, dev(BRIDGE, 3, 16, 3, 16, fmt=OLD)),
        (RP + "/0000:01:00.0", dev(GPU, 3, 16, 3, 16, **NUMA0)),
    ])
    # (e) Gen4 card in a Gen3-max slot running Gen3: not downtrained (docs/cases.md #25)
    tree("gen3_slot", [
        (RP, dev(BRIDGE, 3, 16, 3, 16)),
        (RP + "/0000:01:00.0", dev(GPU, 3, 16, 4, 16, **NUMA0)),
    ])
    # no NVIDIA GPU: a bridge and the NVIDIA audio function only
    tree("no_gpu", [
        (RP, dev(BRIDGE, 4, 16, 4, 16)),
        (RP + "/0000:01:00.1", dev(AUDIO, 4, 16, 4, 16)),
    ])
    # a VM: GPU on the root bus, no PCIe link attributes, numa_node -1
    tree("no_link", [
        ("pci0000:00/0000:00:05.0", dev(GPU, None, 0, None, 0, numa=-1, cpus="0-1")),
    ])
    # /proc for -p 1234: three threads; local CPUs of the GPU are 0-3
    proc = os.path.join(OUT, "proc")
    shutil.rmtree(proc, ignore_errors=True)
    for tid, allowed, last in ((1234, "0-7", 2), (1235, "0-3", 1), (1236, "4-7", 5)):
        d = os.path.join(proc, "1234", "task", str(tid))
        os.makedirs(d)
        with open(os.path.join(d, "status"), "w") as f:
            f.write(f"Name:\tllama (srv)\nPid:\t{tid}\nCpus_allowed:\tff\n"
                    f"Cpus_allowed_list:\t{allowed}\nMems_allowed_list:\t0\n")
        fields = ["S"] + ["0"] * 35 + [str(last)] + ["0"] * 13
        with open(os.path.join(d, "stat"), "w") as f:
            f.write(f"{tid} (llama (srv)) " + " ".join(fields) + "\n")


if __name__ == "__main__":
    main()
