#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Is there a Node.js new enough for the demo engine, before anything is installed
# or built? tools/setup.sh runs this first (so `make demo` and `make test` stop
# here, not after the apt and npm work). node-llama-cpp's pinned version declares
# the Node.js it runs on in its package.json "engines" (3.21.1: ">=20.0.0", as
# tools/demo/package-lock.json records it); Debian 12's own nodejs is 18
# (docs/usage.md "The demo's Node.js").
# With a node on PATH, its version is checked; without one, the version apt would
# install (tools/setup.sh takes the distribution's nodejs then).
set -euo pipefail
cd "$(dirname "$0")"

err() { echo "Error: $1" >&2; [ -n "${2:-}" ] && echo "HINT: $2" >&2; exit 1; }

# "node": ">=MAJOR..." of node-llama-cpp's entry in the lock file
need=$(sed -n '/^    "node_modules\/node-llama-cpp": {/,/^    }/p' package-lock.json |
	sed -n 's/^ *"node": ">=\([0-9]*\)[0-9.]*"$/\1/p' | head -1)
ver=$(sed -n '/^    "node_modules\/node-llama-cpp": {/,/^    }/p' package-lock.json |
	sed -n 's/^ *"version": "\(.*\)",$/\1/p' | head -1)
[ -n "$need" ] && [ -n "$ver" ] ||
	err "no Node.js requirement for node-llama-cpp in tools/demo/package-lock.json" \
		"its entry must keep \"engines\": {\"node\": \">=N...\"}"
hint="install Node.js $need or newer with its npm (Debian 12's nodejs is 18: e.g. NodeSource's node_$need.x apt repository, or the Node.js project's own binaries), put it first on PATH, then rerun"

if command -v node >/dev/null; then
	have=$(node --version 2>/dev/null || true)
	where="$(command -v node)"
else
	# setup.sh would install the distribution's nodejs: the version apt offers
	have=$(apt-cache policy nodejs 2>/dev/null | sed -n 's/^ *Candidate: \([0-9][^ ]*\)$/\1/p' || true)
	where="apt's nodejs package"
	[ -n "$have" ] || err "node not found, and apt offers no nodejs package" "$hint"
fi
major=$(echo "$have" | sed -n 's/^v\{0,1\}\([0-9][0-9]*\)\..*/\1/p')
[ -n "$major" ] || err "cannot read the version of $where: '$have'" "$hint"
[ "$major" -ge "$need" ] ||
	err "node $have ($where) is too old for the demo engine: node-llama-cpp $ver needs Node.js >= $need" "$hint"
