# SPDX-License-Identifier: GPL-2.0-only
"""Read a BPF ELF object (no libbpf): its program sections and the helper ids
each one calls (BPF_JMP|BPF_CALL with src_reg 0; 1 is a bpf-to-bpf call,
2 a kfunc)."""
import re
import struct

HELPER_DEFS = "/usr/include/bpf/bpf_helper_defs.h"


def sections(path):
    """{name: bytes} of the ELF64 little-endian object at path."""
    d = open(path, "rb").read()
    assert d[:4] == b"\x7fELF" and d[4] == 2 and d[5] == 1, path
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdrs[shstrndx]
    names = d[strtab[4]:strtab[4] + strtab[5]]
    out = {}
    for h in hdrs:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        out[name] = (h[1], d[h[4]:h[4] + h[5]])	# (sh_type, bytes)
    return out


def programs(path):
    """{section name: set of helper ids} for the executable program sections."""
    progs = {}
    for name, (sh_type, data) in sections(path).items():
        if sh_type != 1 or name.startswith(".") or name in ("license", "version"):
            continue
        ids = set()
        for off in range(0, len(data) - 7, 8):
            code, regs, _, imm = struct.unpack_from("<BBhi", data, off)
            if code == 0x85 and (regs >> 4) == 0:
                ids.add(imm)
        progs[name] = ids
    return progs


def helper_names():
    """{id: name} from libbpf's bpf_helper_defs.h."""
    text = open(HELPER_DEFS).read()
    return {int(m.group(2)): m.group(1) for m in
            re.finditer(r"\(\*(bpf_\w+)\)\([^;]*\) = \(void \*\) (\d+);", text)}
