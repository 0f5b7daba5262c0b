// SPDX-License-Identifier: GPL-2.0-only
/* The live tracer's probe sources: loaded, attached, added to the loop (tracer.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "user/cmd/gpu_attach.h"
#include "user/cmd/tracer.h"
#include "user/hw/pcie.h"
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/probe/caps.h"
#include "user/probe/engine_setup.h"
#include "user/probe/gpu_rx.h"
#include "user/probe/sched_probe.h"
#include "user/probe/tls_probe.h"
#include "user/probe/tp_check.h"

void tracer__add_source(struct tracer *t, const struct ttf_probe_source *s)
{
	if (t->n_sources < TRACER_MAX_SOURCES)
		t->sources[t->n_sources++] = *s;
}

int tracer__check_environment(void)
{
	const char *btf = getenv("TTFTRACE_SYS_BTF");

	if (!btf)
		btf = "/sys/kernel/btf/vmlinux";
	uint64_t caps = 0;
	char missing[64];
	int err = caps__effective(&caps);

	if (err) {
		ttf_error("mount /proc", "cannot read this process's capabilities: %s",
			  strerror(-err));
		return TTF_EXIT_PRIV;
	}
	if (caps__check_bpf(caps, missing, sizeof(missing))) {
		ttf_error("run as root, or grant them: `setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep "
			  "ttftrace`; in a container add them to the securityContext. Uprobes "
			  "need CAP_SYS_ADMIN on 6.16+, or UID 0 and tracefs (docs/deploy.md)",
			  "ttftrace needs %s to load its BPF programs", missing);
		return TTF_EXIT_PRIV;
	}
	if (!caps__has(caps, TTF_CAP_SYS_PTRACE))
		ttf_warn("no CAP_SYS_PTRACE: processes of other users cannot be inspected "
			 "(/proc/PID/fd for --port, /proc/PID/maps for uprobes)");
	if (access(btf, R_OK)) {
		ttf_error("ttftrace uses CO-RE and tp_btf programs: it needs a kernel built with "
			  "CONFIG_DEBUG_INFO_BTF=y",
			  "kernel BTF not found at %s", btf);
		return TTF_EXIT_KERNEL;
	}
	return 0;
}

/* The start-up line that says which network source runs, and why. */
static void print_net_source(const struct tracer *t, enum net_source asked)
{
	const char *how = t->st.source == NET_SOURCE_SOCK ?
		t->st.sys_enter_tps ?
		"socket tracepoints sock_recv_length/sock_send_length, syscall arguments from "
		"the per-syscall tracepoints syscalls:sys_enter_X" :
		"socket tracepoints sock_recv_length/sock_send_length, syscall arguments from "
		"raw sys_enter" :
		t->st.raw_tp ? "raw syscall tracepoints sys_enter/sys_exit (raw_tp)" :
			       "raw syscall tracepoints sys_enter/sys_exit (tp_btf)";
	const char *why = asked != NET_SOURCE_AUTO ? "--net-source" :
		t->st.source == NET_SOURCE_SOCK ? "auto" :
		"auto: this kernel has no sock_recv_length/sock_send_length";

	fprintf(stderr, "Net source: %s, %s (%s)\n", net_source__name(t->st.source), how, why);
	/* the cost an operator should know: a BPF run on each syscall of the host, not only ours */
	if (t->st.source == NET_SOURCE_SOCK && !t->st.sys_enter_tps)
		fprintf(stderr, "Net source: raw sys_enter instead of the tracefs syscall "
			"tracepoints: %s; it runs a BPF program on every syscall of the whole "
			"host, not only the traced processes' (docs/deploy.md)\n",
			t->st.sys_enter_why[0] ? t->st.sys_enter_why : "?");
}

int tracer__load_net(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	struct net_probe_opts po = {
		.sz = sizeof(po),
		.capture_bytes = o->capture_bytes,
		.capture_send_bytes = o->capture_send_bytes,
		.ringbuf_bytes = o->ringbuf_bytes,
		.port_filter = o->target == TTF_TARGET_PORT && o->no_hops ? o->port : 0,
		.follow_comm = o->target == TTF_TARGET_COMM ? o->comm : NULL,
		.follow_hops = !o->no_hops,
		.skip_progs = getenv("TTFTRACE_SKIP_PROGS"),
		.source = o->net_source,
		.no_tls = o->no_tls,
		.on_event = tracer__on_net,
		.ctx = t,
	};
	struct ttf_probe_source src;
	char missing[64];
	int err;

	t->vmlinux_btf = tp_check__kernel_btf();
	if (!t->vmlinux_btf)
		ttf_warn("cannot read kernel BTF to check tracepoints (%s)", strerror(errno));
	po.vmlinux_btf = t->vmlinux_btf;
	t->probe = net_probe__open_load(&po, &err, missing, sizeof(missing));
	if (!t->probe && missing[0]) {
		ttf_error("sock_recv_length and sock_send_length arrived in Linux 6.3; the sock "
			  "source needs them and sys_enter: use --net-source auto or syscall",
			  "this kernel has no %s tracepoint (no btf_trace_%s in its BTF)",
			  missing, missing);
		return TTF_EXIT_KERNEL;
	}
	if (!t->probe) {
		if (err == -EPERM) {
			ttf_error("run as root; in a container add CAP_BPF, CAP_PERFMON",
				  "not permitted to load BPF programs (%s)", strerror(-err));
			return TTF_EXIT_PRIV;
		}
		if (err == -ENOENT || err == -ESRCH) {
			ttf_error("ttftrace needs a kernel with BTF, 6.3+ for the sock source and "
				  "5.8+ for the syscall source; run with -vvv for libbpf's log",
				  "the kernel lacks a type or tracepoint the probes need (%s)",
				  strerror(-err));
			return TTF_EXIT_KERNEL;
		}
		ttf_error("run with -vvv for libbpf's log", "loading BPF programs failed: %s",
			  strerror(-err));
		return TTF_EXIT_NOT_ATTACHED;
	}
	err = net_probe__attach(t->probe, &t->st);
	if (err) {
		ttf_error("run with -v to see which programs failed, -vvv for libbpf's log",
			  t->st.source == NET_SOURCE_SOCK ?
			  "nothing attached: the socket probes (sock_recv_length, "
			  "sock_send_length) are required (%d attached, %d failed)" :
			  "nothing attached: the syscall probes (sys_enter, sys_exit) are "
			  "required (%d attached, %d failed)",
			  t->st.n_attached, t->st.n_failed);
		return TTF_EXIT_NOT_ATTACHED;
	}
	print_net_source(t, po.source);
	net_probe__source(t->probe, &src);
	tracer__add_source(t, &src);
	for (size_t i = 0; i < t->targets.n; i++)
		net_probe__trace_tgid(t->probe, t->targets.tgids[i]);
	for (size_t i = 0; i < t->targets.n_ports; i++)
		net_probe__trace_port(t->probe, t->targets.port_netns[i], t->targets.ports[i]);
	return 0;
}

/*
 * TLS plaintext (user/probe/tls_probe.h): the libraries the targets map now,
 * and on every tick those of processes traced or files mapped since.
 * Optional: without it TLS connections stay opaque.
 */
void tracer__open_tls(struct tracer *t)
{
	struct ttf_probe_source src;

	if (t->opts->no_tls)
		return;
	t->tls = tls_probe__new(t->probe);
	if (!t->tls) {
		ttf_warn("TLS uprobes unavailable (%s): TLS connections are not parsed",
			 strerror(errno));
		return;
	}
	if (!tls_probe__scan(t->tls))
		ttf_info("tls: no TLS library (libssl, a static OpenSSL, Go crypto/tls) in the "
			 "traced processes yet");
	tls_probe__source(t->tls, &src);
	tracer__add_source(t, &src);
}

/*
 * The spans each CPU's part of the scheduler's flight recorder holds
 * (docs/kernel.md B4.1): one drain interval of records at the rate above
 * which the loop drains within DRAIN_FAST_MS, all of them one CPU's spans
 * at worst; 8,192 (320 KiB a CPU) at the default 1 s. No more: the
 * recorder's stores go to lines the CPU has not touched since the slot
 * last came round, and on llama-server a 32,768-span recorder made
 * handle_switch 5 to 17% dearer per run than this (bench/README.md).
 * A burst past half a CPU's slots wakes the loop (bpf/sched.bpf.c
 * wake_reader); what it overwrites still is counted
 * (sched_flight_overwritten).
 */
static uint32_t sched_flight_spans(const struct ttf_opts *o)
{
	int drain_ms = o->drain_ms ? o->drain_ms : TTF_DEFAULT_DRAIN_MS;

	return (uint32_t)((uint64_t)DRAIN_FAST_RECORDS_PER_S * (uint64_t)drain_ms / 1000);
}

/* Scheduler records of the traced threads (sharing the net probe's tgid set). Optional. */
void tracer__open_sched(struct tracer *t, struct pipeline_opts *po)
{
	struct sched_probe_opts so = { .sz = sizeof(so) };
	struct ttf_probe_source src;
	char missing[64];
	int err;

	if (t->opts->no_sched)
		return;
	so.tgid_map_fd = net_probe__tgids_fd(t->probe);
	so.flight_spans = sched_flight_spans(t->opts);
	so.on_event = tracer__on_sched;
	so.ctx = t;
	so.vmlinux_btf = t->vmlinux_btf;
	t->sched_probe = sched_probe__open_load(&so, &err, missing, sizeof(missing));
	if (!t->sched_probe || (err = sched_probe__attach(t->sched_probe))) {
		if (missing[0])
			ttf_warn("scheduler probes unavailable (this kernel has no %s tracepoint): "
				 "no runqueue/off-CPU overlay", missing);
		else
			ttf_warn("scheduler probes unavailable (%s): no runqueue/off-CPU overlay",
				 strerror(-err));
		sched_probe__destroy(t->sched_probe);
		t->sched_probe = NULL;
		return;
	}
	po->sched = 1;
	sched_probe__source(t->sched_probe, &src);
	tracer__add_source(t, &src);
}

/* Engine uprobes from --profile/--probe, or the built-in profiles. */
int tracer__open_engine(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	struct engine_setup_opts eo = { .n_profiles = o->n_profiles, .n_probes = o->n_probes,
					.auto_profiles = !o->no_profile };
	struct ttf_probe_source src;
	int err;

	for (int i = 0; i < o->n_profiles; i++)
		eo.profiles[i] = o->profiles[i];
	for (int i = 0; i < o->n_probes; i++)
		eo.probes[i] = o->probes[i];
	eo.out = pipeline__records(t->pipe);
	err = engine_setup__new(&eo, &t->engine);
	if (err == -EINVAL)
		return TTF_EXIT_USAGE;
	if (err == -EOPNOTSUPP) {
		ttf_error("engine uprobes need Linux 5.15 or later; without --profile and --probe "
			  "the rest is traced", "this kernel has no bpf_get_attach_cookie");
		return TTF_EXIT_KERNEL;
	}
	if (err && (o->n_profiles || o->n_probes)) {
		ttf_error("run with -vvv for libbpf's log", "engine uprobes: %s",
			  err == -ENOEXEC ? "the kernel refused their BPF programs" : strerror(-err));
		return TTF_EXIT_NOT_ATTACHED;
	}
	if (t->engine) {
		engine_setup__source(t->engine, &src);
		tracer__add_source(t, &src);
	}
	return 0;
}

/* What a collector loaded into a running process found there (gpu-attach). */
static void on_gpu_notice(void *ctx, uint32_t pid, uint32_t code, const char *text)
{
	fprintf(stderr, "PID %u: GPU: %s\n", pid, text);
}

/*
 * Listen for CUPTI collectors (servers started with CUDA_INJECTION64_PATH).
 * Optional: without it the stage split has no GPU part.
 */
void tracer__open_gpu(struct tracer *t, struct pipeline_opts *po)
{
	struct gpu_rx_opts gro = { .sz = sizeof(gro), .notice = on_gpu_notice };
	struct pcie_gpu *gpus;
	int n;

	t->gpu_rx = gpu_rx__new(&gro);
	if (!t->gpu_rx) {
		ttf_warn("not listening for CUPTI collectors (%s): no GPU spans",
			 strerror(errno));
		return;
	}
	po->gpu = 1;
	/* Copies are compared with the first NVIDIA GPU's PCIe path, when there is one. */
	gpus = calloc(PCIE_MAX_GPUS, sizeof(*gpus));
	n = gpus ? pcie__find_gpus(t->opts->sysfs_root, gpus, PCIE_MAX_GPUS) : 0;
	if (n > 0)
		po->link_gbps = pcie__path_gbps(t->opts->sysfs_root, gpus[0].bdf);
	if (n > 1)
		ttf_info("%d GPUs: copy bandwidth is compared with %s's link", n, gpus[0].bdf);
	free(gpus);
}

/* --gpu-attach: the collector into every target found at start (docs/cupti.md A9). */
int tracer__attach_gpu(struct tracer *t)
{
	struct gpu_attach_opts ga = { .sock = gpu_attach__sock(NULL), .out = stderr };
	char lib[PATH_MAX];
	int code;

	if (gpu_attach__find_lib(NULL, lib, sizeof(lib)))
		return TTF_EXIT_USAGE;
	ga.lib = lib;
	if (!t->gpu_rx)
		ttf_warn("--gpu-attach: not listening for collectors; they report to the ttftrace "
			 "that listens on %s", ga.sock);
	for (size_t i = 0; i < t->targets.n; i++) {
		code = gpu_attach__run((pid_t)t->targets.tgids[i], &ga);
		if (code)
			return code;
	}
	return 0;
}
