/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TLS source: places the TLS library uprobes of the net probe's object
 * (bpf/tls.bpf.h) in the files the traced processes map, so that the
 * plaintext of TLS connections reaches the same recognizers as a plain
 * socket's payload (docs/tls.md). Its records travel in the net probe's
 * ring; this source only attaches, rescans and counts.
 *
 * Libraries, by file:
 *   OpenSSL     a mapped libssl.so*, or the main executable when it defines
 *               SSL_write and SSL_read (a static copy): SSL_write,
 *               SSL_write_ex, SSL_read, SSL_read_ex (entry + uretprobe) and
 *               SSL_do_handshake (the connection's socket)
 *   Go          a Go main executable with crypto/tls.(*Conn).Write/Read
 *               (entry + a uprobe on each RET instruction: no uretprobes in
 *               Go, docs/cases.md #4) and (*Conn).handshakeContext
 * Each file is attached once per inode (pid -1); the BPF side keeps only
 * traced processes. A process without any of them is not an error.
 */
#ifndef TTFTRACE_TLS_PROBE_H
#define TTFTRACE_TLS_PROBE_H

#include <stdint.h>
#include <stdio.h>
#include "user/probe/source.h"

struct net_probe;
struct tls_probe;

/*
 * A TLS source over np's programs. Returns NULL with errno (ENOMEM; ENOENT:
 * np was loaded without them, --no-tls).
 */
struct tls_probe *tls_probe__new(struct net_probe *np);
void tls_probe__free(struct tls_probe *tp);

/*
 * Look at every process in the net probe's traced set, at the files it maps
 * that were not looked at yet: attach to the TLS libraries found, one line
 * on stderr each ("tls: OpenSSL 3 at PATH in PID n"). Returns libraries
 * attached now (>= 0). The source's tick does the same, at once for a
 * process traced since, and for the others when their executable mappings
 * changed (dlopen, exec; user/probe/maps_watch.h), at least every 10 s.
 */
int tls_probe__scan(struct tls_probe *tp);
/* Look at one process's mappings now (one the tracer just began to trace). Attachments made. */
int tls_probe__scan_pid(struct tls_probe *tp, uint32_t tgid);
/* At the end: say how many plaintext reads/writes could not be joined to a socket. */
void tls_probe__summary(struct tls_probe *tp, FILE *f);

/* As a source (user/probe/source.h): tick scans; its records come through the net probe. */
void tls_probe__source(struct tls_probe *tp, struct ttf_probe_source *out);

#endif /* TTFTRACE_TLS_PROBE_H */
