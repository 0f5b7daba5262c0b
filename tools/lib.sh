# SPDX-License-Identifier: GPL-2.0-only
# Shell helpers shared by tools/demo/run.sh and the bench/ scripts (sourced).

# die MESSAGE [HINT]: "Error: ..." (+ "HINT: ...") on stderr, exit 1.
die() {
	echo "Error: $1" >&2
	[ -z "${2:-}" ] || echo "HINT: $2" >&2
	exit 1
}

# stop PID SIGNAL: signal a process we started, wait up to 10 s, then kill it.
stop() {
	local pid=$1 sig=$2 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# wait_for FILE PATTERN SECONDS PID: wait until FILE contains PATTERN while PID lives.
wait_for() {
	local i
	for i in $(seq $(($3 * 10))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$4" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# ab_rounds A B ROUNDS OUT_A OUT_B: call the script's `round BINARY OUT` for
# build A once, or, with B set, ROUNDS times each in alternating order
# (A B, B A, ...), so that drift on a noisy machine hits both alike.
ab_rounds() {
	local i
	: >"$4"
	: >"$5"
	if [ -z "$2" ]; then
		round "$1" "$4"
		return
	fi
	for i in $(seq "$3"); do
		if [ $((i % 2)) = 1 ]; then
			round "$1" "$4"; round "$2" "$5"
		else
			round "$2" "$5"; round "$1" "$4"
		fi
	done
}
