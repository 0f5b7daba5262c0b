#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Install what ttftrace needs to build, test and run its demo on a fresh
# Debian 12 machine (as root). Idempotent: does nothing when all is present.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libcjson-dev libcmocka-dev
      libcurl4-openssl-dev libpci-dev libinih-dev libmicrohttpd-dev libcapstone-dev uthash-dev pkg-config
      python3 python3-pytest make gcc iproute2 procps golang-go
      cmake g++ git	# tools/demo/build_llama_server.sh: llama.cpp's own server
      bpftrace	# bench/overhead.sh: the bpftrace baseline
      libclang-rt-14-dev	# tests/fuzz: libFuzzer (clang only recommends it)
      prometheus	# tests/export: the real Prometheus scrapes --metrics
      nginx haproxy curl	# tests/hops, make demo-hops: real gateways in front of a traced server
      openssl libssl-dev	# tests/tls: certificates, a static OpenSSL fixture (with nginx, golang-go, curl)
      chromium	# tests/report: renders `ttftrace report` pages headless
      qemu-system-x86 busybox-static	# make qemu-test: Debian's 6.1 kernel under TCG
      curl python3-starlette python3-uvicorn	# tests/proto: gzip'd SSE, Expect: 100-continue
      python3-hypercorn python3-h2 python3-grpcio)	# tests/proto: HTTP/2 and gRPC servers and clients

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js: the machine image ships one (with npm); take Debian's only when absent.
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "Error: missing packages: ${missing[*]}" >&2
		echo "HINT: run as root, or: sudo apt-get install ${missing[*]}" >&2
		exit 1
	fi
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Demo engine (node-llama-cpp, CPU build only) and demo model.
if [ -x tools/demo/install.sh ]; then
	tools/demo/install.sh
	tools/demo/build_llama_server.sh
fi
