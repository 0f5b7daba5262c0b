// SPDX-License-Identifier: GPL-2.0-only
/*
 * empty_hooks: load bench/empty_hooks.bpf.o, attach every tp_btf and tracepoint program, and
 * attach handle_entry/handle_return as uprobe/uretprobe to each PATH:SYMBOL
 * given (all processes, as ttftrace does: user/probe/engine_probe.c). Prints
 * "attached N" on stdout, then waits for SIGINT/SIGTERM. Used only by
 * bench/overhead.sh and bench/cost.py (built there with gcc -lbpf).
 *
 * usage: empty_hooks OBJ [PATH:SYMBOL ...]
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINKS 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int attach_uprobe(struct bpf_object *obj, const char *spec, struct bpf_link **links,
			 int *n)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o);
	char path[4096], *sym;
	int ret;

	snprintf(path, sizeof(path), "%s", spec);
	sym = strrchr(path, ':');
	if (!sym)
		return -EINVAL;
	*sym++ = '\0';
	o.func_name = sym;
	for (ret = 0; ret < 2; ret++) {
		struct bpf_program *p = bpf_object__find_program_by_name(obj,
				ret ? "handle_return" : "handle_entry");

		o.retprobe = ret;
		if (*n >= MAX_LINKS)
			return -E2BIG;
		links[*n] = bpf_program__attach_uprobe_opts(p, -1, path, 0, &o);
		if (!links[*n])
			return -errno;
		(*n)++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[MAX_LINKS];
	struct bpf_program *prog;
	struct bpf_object *obj;
	int n = 0, err, i;

	if (argc < 2) {
		fprintf(stderr, "usage: empty_hooks OBJ [PATH:SYMBOL ...]\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "Error: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "Error: cannot load %s: %s\n", argv[1], strerror(-err));
		goto cleanup;
	}
	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__type(prog) != BPF_PROG_TYPE_TRACING &&
		    bpf_program__type(prog) != BPF_PROG_TYPE_TRACEPOINT)
			continue;
		links[n] = bpf_program__attach(prog);
		if (!links[n]) {
			/* Optional hooks (sk_data_ready before 6.7) may be absent. */
			fprintf(stderr, "empty_hooks: %s not attached: %s\n",
				bpf_program__name(prog), strerror(errno));
			continue;
		}
		n++;
	}
	for (i = 2; i < argc; i++) {
		err = attach_uprobe(obj, argv[i], links, &n);
		if (err) {
			fprintf(stderr, "Error: cannot attach uprobes to %s: %s\n", argv[i],
				strerror(-err));
			goto cleanup;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("attached %d\n", n);
	fflush(stdout);
	while (!stop)
		pause();
	err = 0;
cleanup:
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	bpf_object__close(obj);
	return err ? 1 : 0;
}
