// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/lib/log.h"
#include "user/probe/bpf_util.h"
#include "user/probe/elf_sym.h"
#include "user/probe/maps_watch.h"
#include "user/probe/net_probe.h"
#include "user/probe/proc_maps.h"
#include "user/probe/tls_probe.h"
#include "user/probe/uprobe_attach.h"

#define MAX_LIBS 64
#define MAX_SEEN 4096
#define MAX_RET_SITES 64
#define MAX_TGIDS 1024

enum tls_kind { TLS_OPENSSL = 1, TLS_GO };

/* One function to probe: its entry program and its return program. */
struct tls_func {
	const char *symbol;
	const char *entry;	/* program at the entry */
	const char *ret;	/* OpenSSL: uretprobe; Go: uprobe on every RET */
	int required;		/* without it the library is not taken */
};

/* ssl(7): SSL_write(3), SSL_read(3), SSL_do_handshake(3) */
static const struct tls_func ossl_funcs[] = {
	{ "SSL_write", "tls_ossl_write", "tls_ossl_ret", 1 },
	{ "SSL_read", "tls_ossl_read", "tls_ossl_ret", 1 },
	{ "SSL_write_ex", "tls_ossl_write_ex", "tls_ossl_ret", 0 },
	{ "SSL_read_ex", "tls_ossl_read_ex", "tls_ossl_ret", 0 },
	{ "SSL_do_handshake", "tls_ossl_handshake", "tls_ossl_handshake_ret", 0 },
};

/* Go's crypto/tls (docs/tls.md): method symbols as the Go linker names them. */
static const struct tls_func go_funcs[] = {
	{ "crypto/tls.(*Conn).Write", "tls_go_write", "tls_go_ret", 1 },
	{ "crypto/tls.(*Conn).Read", "tls_go_read", "tls_go_ret", 1 },
	{ "crypto/tls.(*Conn).handshakeContext", "tls_go_handshake", "tls_go_handshake_ret", 0 },
};

struct tls_lib {
	dev_t dev;
	ino_t ino;
	enum tls_kind kind;	/* 0: looked at, nothing to probe */
	char what[48];		/* "OpenSSL 3", "Go crypto/tls", ... */
};

struct tls_seen {
	uint32_t tgid;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
};

/* The tick looks at a new process at once, at the others this often (dlopen, exec). */
#define TLS_RESCAN_NS 1000000000ull

struct tls_probe {
	struct net_probe *np;
	struct tls_lib libs[MAX_LIBS];
	int n_libs;
	struct tls_seen *seen;
	int n_seen;
	struct bpf_link **links;
	int n_links;
	struct maps_watch watch;	/* scans skip a process whose mappings did not change */
	uint64_t next_all_ns;		/* when the tick looks at every process again */
};

struct tls_probe *tls_probe__new(struct net_probe *np)
{
	struct tls_probe *tp;

	if (!net_probe__program(np, "tls_ossl_write")) {
		errno = ENOENT;
		return NULL;
	}
	tp = calloc(1, sizeof(*tp));
	if (!tp)
		return NULL;
	tp->np = np;
	return tp;
}

void tls_probe__free(struct tls_probe *tp)
{
	if (!tp)
		return;
	bpf_util__destroy_links(tp->links, tp->n_links);
	free(tp->links);
	free(tp->seen);
	free(tp);
}

/*
 * Attach through the file already opened (and checked) inside the target's
 * root, /proc/self/fd/N, never by its name, which the container may re-point
 * before the kernel resolves it (docs/kernel.md B9).
 */
static int attach_at(struct tls_probe *tp, const char *prog_name, int fd, uint64_t off, bool ret)
{
	struct bpf_program *prog = net_probe__program(tp->np, prog_name);
	struct bpf_link *l;

	if (!prog)
		return -ENOENT;
	l = uprobe_attach(prog, fd, off, 0, ret);
	if (!l)
		return -errno;
	return bpf_util__push_link(&tp->links, &tp->n_links, l);
}

/* Probe one function of a library: 1 attached, 0 not in the file, <0 error. */
static int attach_func(struct tls_probe *tp, struct elf_file *ef, int fd, const char *path,
		       bool go, const struct tls_func *f)
{
	uint32_t rets[MAX_RET_SITES];
	struct elf_sym_info sym;
	int cls, n, err;

	if (elf_file__find_func(ef, f->symbol, &sym))
		return 0;
	err = attach_at(tp, f->entry, fd,
			sym.file_offset + elf_file__entry_offset(ef, &sym, go, &cls), false);
	if (err)
		return err;
	if (!go)
		return attach_at(tp, f->ret, fd, sym.file_offset, true) ?: 1;
	n = elf_file__ret_offsets(ef, &sym, rets, MAX_RET_SITES);
	if (n <= 0) {
		ttf_warn("tls: %s in %s: no RET instruction found: its plaintext is not seen",
			 f->symbol, path);
		return n ? n : -ENOENT;
	}
	for (int i = 0; i < n; i++) {
		err = attach_at(tp, f->ret, fd, sym.file_offset + rets[i], false);
		if (err)
			return err;
	}
	return 1;
}

/* Which TLS library file ef is (0: none), and its name for the start-up line. */
static enum tls_kind classify(struct elf_file *ef, const struct proc_map *m, char *what,
			      size_t what_sz)
{
	const char *base = strrchr(m->path, '/');
	struct elf_sym_info sym;

	base = base ? base + 1 : m->path;
	if (elf_file__is_go(ef)) {
		if (elf_file__find_func(ef, go_funcs[0].symbol, &sym))
			return 0;
		snprintf(what, what_sz, "Go crypto/tls");
		return TLS_GO;
	}
	if (elf_file__find_func(ef, "SSL_write", &sym) || elf_file__find_func(ef, "SSL_read", &sym))
		return 0;
	if (!fnmatch("libssl.so*", base, 0)) {
		const char *v = base + strlen("libssl.so");

		/* the soname's version: libssl.so.3 is OpenSSL 3 */
		snprintf(what, what_sz, "OpenSSL %s", *v == '.' ? v + 1 : "(unversioned)");
	} else {
		snprintf(what, what_sz, "OpenSSL%s (static)",
			 elf_file__find_func(ef, "OPENSSL_version_major", &sym) ? "" : " 3");
	}
	return TLS_OPENSSL;
}

/* Attach every function of the library in fd. 0, or a negative errno (message printed). */
static int attach_lib(struct tls_probe *tp, struct tls_lib *lib, struct elf_file *ef, int fd,
		      const char *path)
{
	const struct tls_func *fs = lib->kind == TLS_GO ? go_funcs : ossl_funcs;
	size_t n = lib->kind == TLS_GO ? sizeof(go_funcs) / sizeof(go_funcs[0]) :
					 sizeof(ossl_funcs) / sizeof(ossl_funcs[0]);

	for (size_t i = 0; i < n; i++) {
		int r = attach_func(tp, ef, fd, path, lib->kind == TLS_GO, &fs[i]);

		if (r < 0 || (r == 0 && fs[i].required)) {
			ttf_warn("tls: %s in %s: %s: its TLS plaintext is not seen", fs[i].symbol,
				 path, r ? uprobe_attach__why(r) : "not found");
			return r ? r : -ENOENT;
		}
		if (r == 0)
			ttf_info("tls: %s not in %s", fs[i].symbol, path);
	}
	return 0;
}

static bool seen_before(struct tls_probe *tp, uint32_t tgid, const struct proc_map *m)
{
	struct tls_seen *v;

	for (int i = 0; i < tp->n_seen; i++)
		if (tp->seen[i].tgid == tgid && tp->seen[i].inode == m->inode &&
		    tp->seen[i].dev_major == m->dev_major && tp->seen[i].dev_minor == m->dev_minor)
			return true;
	if (tp->n_seen == MAX_SEEN)
		return true;	/* full: look no further (counted in no file; a bound, not a loss) */
	v = realloc(tp->seen, (tp->n_seen + 1) * sizeof(*v));
	if (!v)
		return true;
	tp->seen = v;
	tp->seen[tp->n_seen++] = (struct tls_seen){ tgid, m->dev_major, m->dev_minor, m->inode };
	return false;
}

/* The library record of the file (st), looked at once: NULL when the table is full. */
static struct tls_lib *lib_of(struct tls_probe *tp, const struct proc_map *m, int fd,
			      const char *path, const struct stat *st, bool *fresh)
{
	struct tls_lib *lib;
	struct elf_file *ef;
	int err;

	*fresh = false;
	for (int i = 0; i < tp->n_libs; i++)
		if (tp->libs[i].dev == st->st_dev && tp->libs[i].ino == st->st_ino)
			return &tp->libs[i];
	if (tp->n_libs == MAX_LIBS)
		return NULL;
	lib = &tp->libs[tp->n_libs++];
	memset(lib, 0, sizeof(*lib));
	lib->dev = st->st_dev;
	lib->ino = st->st_ino;
	ef = elf_file__open_fd(fd, &err);
	if (!ef) {
		if (err != -ENOEXEC)
			ttf_warn("tls: cannot read %s: %s", path, strerror(-err));
		return lib;
	}
	lib->kind = classify(ef, m, lib->what, sizeof(lib->what));
	if (lib->kind && attach_lib(tp, lib, ef, fd, path))
		lib->kind = 0;
	else if (lib->kind)
		*fresh = true;
	elf_file__close(ef);
	return lib;
}

/* A candidate file: a libssl, or the process's main executable (static OpenSSL, Go). */
static bool candidate(const struct proc_map *m, const struct stat *exe)
{
	const char *base = strrchr(m->path, '/');

	base = base ? base + 1 : m->path;
	return !fnmatch("libssl.so*", base, 0) || (exe && m->inode == exe->st_ino);
}

static int scan_pid(struct tls_probe *tp, uint32_t tgid)
{
	struct proc_maps pm = { 0 };
	char exe_path[64];
	struct stat exe;
	bool have_exe;
	int made = 0;

	if (proc_maps__read(tgid, &pm))
		return 0;	/* gone, or not ours to read: the net source says what it sees */
	snprintf(exe_path, sizeof(exe_path), "/proc/%u/exe", tgid);
	have_exe = !stat(exe_path, &exe);
	for (int i = 0; i < pm.n; i++) {
		const struct proc_map *m = &pm.v[i];
		struct tls_lib *lib;
		char path[PATH_MAX];
		struct stat st;
		bool fresh;
		int fd;

		if (!proc_map__is_exec_file(m) || !candidate(m, have_exe ? &exe : NULL) ||
		    seen_before(tp, tgid, m))
			continue;
		fd = proc_map__open(tgid, m, path, sizeof(path), &st);
		if (fd < 0)
			continue;
		lib = lib_of(tp, m, fd, path, &st, &fresh);
		close(fd);
		if (!lib || !lib->kind)
			continue;
		fprintf(stderr, "tls: %s at %s in PID %u\n", lib->what, m->path, tgid);
		if (fresh)
			made++;
	}
	proc_maps__free(&pm);
	return made;
}

/*
 * Scan the traced processes whose executable mappings changed (maps_watch.h).
 * now_ns 0 (not from the tick) looks at all of them; the tick (now_ns,
 * CLOCK_MONOTONIC ns) only at those not looked at before, and at all once
 * TLS_RESCAN_NS has passed since it last did.
 */
static int scan_set(struct tls_probe *tp, uint64_t now_ns)
{
	int fd = net_probe__tgids_fd(tp->np), made = 0, n = 0;
	uint32_t key, next, tgids[MAX_TGIDS];
	uint32_t *prev = NULL;
	bool all = !now_ns || now_ns >= tp->next_all_ns;
	struct timespec ts;

	/* the traced set first (scanning reads files: keys may change meanwhile) */
	while (n < MAX_TGIDS && !bpf_map_get_next_key(fd, prev, &next)) {
		tgids[n++] = next;
		key = next;
		prev = &key;
	}
	if (!now_ns) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	if (all)
		tp->next_all_ns = now_ns + TLS_RESCAN_NS;
	for (int i = 0; i < n; i++) {
		if (!all && maps_watch__known(&tp->watch, tgids[i]))
			continue;
		if (maps_watch__changed(&tp->watch, tgids[i], now_ns))
			made += scan_pid(tp, tgids[i]);
	}
	return made;
}

int tls_probe__scan_pid(struct tls_probe *tp, uint32_t tgid)
{
	return tp ? scan_pid(tp, tgid) : 0;
}

int tls_probe__scan(struct tls_probe *tp)
{
	return scan_set(tp, 0);
}

void tls_probe__summary(struct tls_probe *tp, FILE *f)
{
	uint64_t c[TTF_CNT__MAX];

	if (!tp)
		return;
	net_probe__counters(tp->np, c);
	if (c[TTF_CNT_TLS_UNJOINED])
		fprintf(f, "tls: %llu plaintext reads/writes could not be joined to their socket "
			"(their TLS connection did no socket I/O while traced): not counted in any "
			"request\n", (unsigned long long)c[TTF_CNT_TLS_UNJOINED]);
	if (c[TTF_CNT_TLS_CALL_MAP_FULL])
		fprintf(f, "tls: %llu TLS calls not remembered (map full): their plaintext is "
			"not seen\n", (unsigned long long)c[TTF_CNT_TLS_CALL_MAP_FULL]);
}

/* ---- as a probe source ---- */

static int src_poll(void *ctx, int timeout_ms)
{
	return 0;	/* the records come through the net probe's ring */
}

static void src_tick(void *ctx, uint64_t now_ns)
{
	scan_set(ctx, now_ns);
}

void tls_probe__source(struct tls_probe *tp, struct ttf_probe_source *out)
{
	*out = (struct ttf_probe_source){ .name = "tls", .ctx = tp, .poll = src_poll,
					  .tick = src_tick };
}
