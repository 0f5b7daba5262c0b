#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fetch Debian's linux-image-6.1 cloud kernel for the QEMU tier into DIR
# (default .output/qemu/kernel): the newest linux-image-6.1.0-N-cloud-amd64
# package apt knows, downloaded (not installed) and unpacked with dpkg-deb.
# Prints the vmlinuz path. Idempotent.
set -euo pipefail
dir=${1:-.output/qemu/kernel}
mkdir -p "$dir"
have=$(ls "$dir"/boot/vmlinuz-6.1.* 2>/dev/null | head -n1 || true)
if [ -n "$have" ]; then
	echo "$have"
	exit 0
fi
pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' |
	awk '{print $1}' | sort -V | tail -n1)
if [ -z "$pkg" ]; then
	echo "Error: apt knows no linux-image-6.1.0-*-cloud-amd64-unsigned package" >&2
	echo "HINT: this needs Debian 12 (bookworm) sources; run apt-get update" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "$pkg" >/dev/null 2>&1) || {
	echo "Error: apt-get download $pkg failed" >&2
	echo "HINT: needs network access to the Debian mirror" >&2
	exit 1
}
dpkg-deb -x "$tmp"/*.deb "$tmp/x"
cp -r "$tmp/x/boot" "$dir/"
ls "$dir"/boot/vmlinuz-6.1.* | head -n1
