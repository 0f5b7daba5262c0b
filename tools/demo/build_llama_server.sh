#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Build llama.cpp's own HTTP server (llama-server, CPU only) from the source
# that node-llama-cpp ships as a git bundle (llama/gitRelease.bundle, tag
# in llama/llama.cpp.info.json), into tools/demo/llama-server/. The batching
# tests (tests/engine/test_llama_server.py) run it. Idempotent: does nothing when
# the binary is there and the bundle is not newer. About 6 minutes on 2 cores.
# Needs tools/demo/install.sh first, cmake, g++ and git.
set -euo pipefail
cd "$(dirname "$0")"

err() { echo "Error: $1" >&2; [ -n "${2:-}" ] && echo "HINT: $2" >&2; exit 1; }

bundle=node_modules/node-llama-cpp/llama/gitRelease.bundle
out=llama-server
[ -f "$bundle" ] || err "$bundle not found" "run tools/demo/install.sh first"
for t in cmake g++ git; do
	command -v $t >/dev/null || err "$t not found" "apt-get install cmake g++ git"
done
if [ -x $out/bin/llama-server ] && [ ! "$bundle" -nt $out/bin/llama-server ]; then
	exit 0
fi
echo "demo: building llama-server from $bundle (CPU only, a few minutes)"
rm -rf $out/src $out/bin
git clone -q "$bundle" $out/src 2>/dev/null
# Offline: no web UI download, no TLS, no tests or examples.
cmake -S $out/src -B $out/src/build -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
	-DLLAMA_BUILD_UI=OFF -DGGML_NATIVE=OFF -DLLAMA_BUILD_APP=OFF -DCMAKE_BUILD_RPATH='$ORIGIN' >$out/cmake.log 2>&1 ||
	err "cmake configure failed" "see tools/demo/$out/cmake.log"
cmake --build $out/src/build --target llama-server -j"$(nproc)" >$out/build.log 2>&1 ||
	err "llama-server build failed" "see tools/demo/$out/build.log"
mkdir -p $out/bin
cp -a $out/src/build/bin/llama-server $out/src/build/bin/*.so* $out/bin/
rm -rf $out/src
echo "demo: llama-server in tools/demo/$out/bin"
