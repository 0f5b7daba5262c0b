#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the QEMU smoke tier's initramfs (tests/qemu/run.py builds it with
# busybox, ttftrace, the fixture server, tests/fixtures/sse_client and their
# libraries). Runs the smoke tier on the guest kernel and prints everything the
# host checks on the serial console between "TTF-BEGIN <name>" and "TTF-END <name>" lines;
# "TTF-RC <name> <code>" gives an exit status. Then powers the guest off.
export PATH=/bin:/usr/bin:/sbin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
ip link set lo up

show() {	# show NAME FILE
	echo "TTF-BEGIN $1"
	cat "$2"
	echo "TTF-END $1"
}

show_tmp() {	# show_tmp NAME...: show each /tmp/NAME under its name
	for f in "$@"; do show "$f" "/tmp/$f"; done
}

# wait_for FILE TEXT PID TENTHS: until FILE holds TEXT, PID exits, or TENTHS
# tenths of a second passed; sets i to the tenths waited.
wait_for() {
	i=0
	until grep -q "$2" "$1" || [ $i -ge "$4" ]; do
		kill -0 "$3" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
}

echo "TTF-KERNEL $(uname -r)"
echo "TTF-MACHINE $(uname -m)"
[ -r /sys/kernel/btf/vmlinux ] && echo "TTF-BTF yes" || echo "TTF-BTF no"
echo "TTF-BTF-SHA256 $(sha256sum /sys/kernel/btf/vmlinux 2>/dev/null | cut -d' ' -f1)"

# Exit codes for what this kernel lacks (README.md "Exit codes").
ttftrace -p 1 -d 1 --net-source sock >/dev/null 2>/tmp/sock.err
echo "TTF-RC sock_source $?"
show sock_source.err /tmp/sock.err
TTFTRACE_SYS_BTF=/nonexistent ttftrace -p 1 -d 1 >/dev/null 2>/tmp/nobtf.err
echo "TTF-RC no_btf $?"
show no_btf.err /tmp/nobtf.err
TTFTRACE_SKIP_PROGS=all ttftrace -p 1 -d 1 >/dev/null 2>/tmp/noprogs.err
echo "TTF-RC no_programs $?"
show no_programs.err /tmp/noprogs.err

# stop_trace NAME PID: Ctrl-C the tracer a second after its client ended; its exit status
stop_trace() {
	sleep 1
	kill -INT "$2" 2>/dev/null
	wait "$2"
	echo "TTF-RC $1 $?"
}

# The fixture server, 20 requests, traced with the automatic source.
sse_server --port 8080 --ttft-ms 100 --itl-ms 10 --nodelay --rt 50 --log /tmp/truth.ndjson \
	>/tmp/srv.out 2>&1 &
srv=$!
wait_for /tmp/srv.out listening $srv 100
echo
ttftrace -p $srv --json -o /tmp/run.ndjson 2>/tmp/trace.err &
tr=$!
wait_for /tmp/trace.err "Hit Ctrl-C" $tr 600
echo "TTF-ATTACH-S $((i / 10))"
# the independent client (its own HTTP and SSE code, none of ttftrace's): truth
sse_client --port 8080 -n 20 -m 8 -o /tmp/client.ndjson
echo "TTF-RC client $?"
stop_trace trace $tr
kill $srv
show_tmp trace.err run.ndjson truth.ndjson client.ndjson

# The fixture engine (amd64 only): the step uprobe's object loads and walks its
# batches (bpf_loop on 6.1, docs/kernel.md B7 and B7.1); on 5.10, which lacks
# bpf_get_attach_cookie (B8), --profile exits 4.
if [ -x /bin/engine ]; then
	engine --port 8081 --truth /tmp/eng_truth.ndjson >/tmp/eng.out 2>&1 &
	eng=$!
	wait_for /tmp/eng.out listening $eng 100
	ttftrace -p $eng --profile /etc/fixture.ini --json -o /tmp/eng.ndjson 2>/tmp/eng.err &
	tr=$!
	wait_for /tmp/eng.err "Hit Ctrl-C" $tr 600
	sse_client --port 8081 --path /v1/completions -n 10 -m 4 -o /tmp/eng_client.ndjson
	echo "TTF-RC eng_client $?"
	stop_trace eng_trace $tr
	kill $eng
	show_tmp eng.err eng.ndjson eng_truth.ndjson
fi
echo "TTF-DONE"
poweroff -f
