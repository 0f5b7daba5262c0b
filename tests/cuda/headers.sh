#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make cuda-headers-check: the CUPTI collector compiles against each CUDA header set
# there is (docs/gpu.md "Building the collector"): CUDA 11.8 from Debian 12's non-free
# archive (libcupti-dev and, for cuda.h, nvidia-cuda-dev: fetched with apt-get download
# from a sources list and lists dir of its own, headers unpacked with dpkg-deb under
# OUTDIR/cuda-11.8, nothing installed), and the toolkit `make` finds on this machine
# (CUDA 13.0 here). Each: `make CUDA_HOME=... OUTPUT=...` of libttftrace-cupti.so alone,
# -Werror, and the library exports InitializeInjection and ttftrace_cupti_attach only.
# First run downloads about 780 MB (kept: only the 14 MB of headers) and takes about
# 2 minutes; then 20 s. Needs network for the first run; root for apt-get's lists.
# Usage: tests/cuda/headers.sh [OUTDIR]   (default .output/cuda-headers)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$(realpath -m "${1:-.output/cuda-headers}")
C118=$OUT/cuda-11.8
fail() { echo "FAIL: $*" >&2; exit 1; }

fetch_118() {
	[ -f "$C118/usr/include/cupti.h" ] && [ -f "$C118/usr/include/cuda.h" ] && return 0
	local apt=$OUT/apt
	rm -rf "$apt" "$C118"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$C118"
	# Debian 12's non-free component, apart from the system's sources
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"http://deb.debian.org/debian bookworm non-free" > "$apt/sources.list"
	local o=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
		 -o "Dir::State::lists=$apt/lists" -o "Dir::Cache=$apt/cache")
	apt-get "${o[@]}" -qq update || fail "apt-get update of bookworm non-free"
	(cd "$apt/debs" && apt-get "${o[@]}" -qq download libcupti-dev nvidia-cuda-dev) \
		|| fail "apt-get download libcupti-dev nvidia-cuda-dev"
	for d in "$apt"/debs/*.deb; do
		echo "unpacking $(basename "$d")"
		dpkg-deb --fsys-tarfile "$d" | tar -x -C "$C118" --wildcards './usr/include/*'
	done
	rm -rf "$apt"
}

check_lib() {	# name cuda_home
	local name=$1 home=$2 o=$OUT/build-$1 syms
	rm -rf "$o"
	make --no-print-directory CUDA_HOME="$home" OUTPUT="$o" "$o/cupti.conf" \
		"$o/libttftrace-cupti.so" > "$o.log" 2>&1 || { cat "$o.log"; fail "$name: build"; }
	grep -q '^built=1$' "$o/cupti.conf" || fail "$name: $(cat "$o/cupti.conf")"
	syms=$(nm -D --defined-only "$o/libttftrace-cupti.so" | awk '$2 == "T" {print $3}' | sort | xargs)
	[ "$syms" = "InitializeInjection ttftrace_cupti_attach" ] || fail "$name: exports $syms"
	echo "PASS $name: libttftrace-cupti.so built with CUDA_HOME=$home" \
		"(CUPTI_API_VERSION $(sed -n 's/^api=//p' "$o/cupti.conf")), exports $syms"
}

mkdir -p "$OUT"
start=$(date +%s)
fetch_118
echo "CUDA 11.8 headers: $C118/usr/include ($(( $(date +%s) - start )) s)"
check_lib cuda-11.8 "$C118/usr"
host=$(make --no-print-directory -s -f Makefile -f - print-cuda-home <<'MK' 2>/dev/null || true
print-cuda-home:
	@echo $(if $(CUPTI_INC),$(CUDA_HOME))
MK
)
if [ -n "$host" ]; then
	check_lib host "$host"
else
	echo "SKIP host: no CUDA toolkit on this machine (only 11.8 checked)"
fi
echo "cuda-headers-check: $(( $(date +%s) - start )) s"
