#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Regenerate vmlinux/arm64/vmlinux.h from the BTF of Debian 12's arm64 cloud
# kernel (make vmlinux-arm64; docs/kernel.md B5.1).
#
#   tools/vmlinux_arm64.sh [WORKDIR]      (default .output/vmlinux-arm64)
#
# The kernel comes from tests/qemu/fetch_kernel.sh --arch arm64 (downloaded,
# not installed; the system's apt is untouched). Its vmlinuz is a raw arm64
# Image (file(1): "Linux kernel ARM64 boot executable Image"; Debian's 6.1 has
# CONFIG_EFI_ZBOOT unset), not an ELF, and /boot/System.map is a placeholder, so
# the .BTF section's bytes (what /sys/kernel/btf/vmlinux shows) are found by
# their header: magic 0xeB9F, version 1, flags 0, hdr_len 24, then the type and
# string section lengths (include/uapi/linux/btf.h). Exactly one such header
# must be in the image. An EFI zboot image (CONFIG_EFI_ZBOOT, a compressed
# Image inside a PE file) is refused. Writes WORKDIR/vmlinux.btf (raw BTF, what
# bpftool btf dump file reads) and vmlinux/arm64/vmlinux_<major.minor>.h.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-.output/vmlinux-arm64}
BPFTOOL=${BPFTOOL:-bpftool}
vmlinuz=$(tests/qemu/fetch_kernel.sh --arch arm64 "$work/kernel") || exit 1
python3 - "$vmlinuz" "$work/vmlinux.btf" <<'PY'
import gzip, struct, sys
data = open(sys.argv[1], "rb").read()
if data.startswith(b"\x1f\x8b"):
    data = gzip.decompress(data)	# Image.gz (not Debian 12's; not tried)
if data[0x38:0x3c] != b"ARM\x64":	# arm64 boot protocol header (Documentation/arm64/booting.rst)
    sys.exit("Error: %s is not a raw arm64 Image (an EFI zboot image is not handled)" % sys.argv[1])
magic = b"\x9f\xeb\x01\x00\x18\x00\x00\x00"	# 0xeB9F, version 1, flags 0, hdr_len 24
hits, i = [], data.find(magic)
while i >= 0:
    type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", data, i + 8)
    if type_off == 0 and str_off == type_len and i + 24 + type_len + str_len <= len(data):
        hits.append((i, 24 + type_len + str_len))
    i = data.find(magic, i + 1)
if len(hits) != 1:
    sys.exit("Error: %d BTF headers in the image, not one" % len(hits))
off, size = hits[0]
open(sys.argv[2], "wb").write(data[off:off + size])
print("BTF: %d bytes at offset %d of the Image" % (size, off))
PY
ver=$(basename "$vmlinuz" | sed -E 's/^vmlinuz-([0-9]+\.[0-9]+)\..*/\1/')
mkdir -p vmlinux/arm64
"$BPFTOOL" btf dump file "$work/vmlinux.btf" format c > vmlinux/arm64/vmlinux_"$ver".h
ln -sf vmlinux_"$ver".h vmlinux/arm64/vmlinux.h
echo "wrote vmlinux/arm64/vmlinux_$ver.h from $(basename "$vmlinuz")"
