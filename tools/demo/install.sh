#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Install the demo engine (node-llama-cpp, CPU prebuilt only) into
# tools/demo/node_modules and write the demo model tools/demo/model/demo.gguf.
# Idempotent; called by tools/setup.sh. Needs node (check_node.sh), npm and python3.
#
# node-llama-cpp lists every GPU build (CUDA, Vulkan: ~700 MB) as optional
# dependencies. package.json names the CPU package @node-llama-cpp/linux-x64
# directly, so `--omit=optional` keeps it and drops the others;
# `--ignore-scripts` skips node-llama-cpp's postinstall, which would try to
# download or compile llama.cpp when it doubts the prebuilt binary.
set -euo pipefail
cd "$(dirname "$0")"

err() { echo "Error: $1" >&2; [ -n "${2:-}" ] && echo "HINT: $2" >&2; exit 1; }

command -v node >/dev/null || err "node not found" "apt-get install nodejs npm"
command -v npm >/dev/null || err "npm not found" "apt-get install npm"
./check_node.sh    # node-llama-cpp's "engines" (Node.js >= 20 for 3.21.1)
[ "$(uname -m)" = x86_64 ] ||
	err "the demo pins the linux-x64 CPU build of node-llama-cpp; this is $(uname -m)" \
		"edit tools/demo/package.json to name @node-llama-cpp/linux-$(uname -m)"

stamp=node_modules/.ttftrace-demo-installed
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
	echo "demo: installing node-llama-cpp (CPU build) into tools/demo/node_modules"
	npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error
	gpu=$(ls -d node_modules/@node-llama-cpp/*-cuda* node_modules/@node-llama-cpp/*-vulkan* \
		2>/dev/null || true)
	[ -z "$gpu" ] || err "GPU builds were installed: $gpu" "npm must honour --omit=optional"
	[ -f node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node ] ||
		err "the CPU prebuilt binary is missing" "rm -rf tools/demo/node_modules and rerun"
	touch "$stamp"
fi

if [ ! -f model/demo.gguf ] || [ gen_gguf.py -nt model/demo.gguf ]; then
	echo "demo: writing model/demo.gguf"
	python3 gen_gguf.py -o model/demo.gguf
fi
