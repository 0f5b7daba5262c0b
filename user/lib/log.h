/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Diagnostics on stderr, gated in one place by the -v level:
 *   0  errors and warnings only; libbpf warnings
 *   1  (-v)   informational lines (what attached, targets found)
 *   2  (-vv)  debug lines
 *   3  (-vvv) libbpf debug output too
 */
#ifndef TTFTRACE_LOG_H
#define TTFTRACE_LOG_H

#include <stdarg.h>
#include <bpf/libbpf.h>

extern int ttf_verbosity;

/* "Error: <msg>" and, when hint is not NULL, "HINT: <hint>". */
void ttf_error(const char *hint, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ttf_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ttf_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ttf_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Install as libbpf's print callback (libbpf_set_print). */
int ttf_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap);

#endif /* TTFTRACE_LOG_H */
