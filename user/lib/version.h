/* SPDX-License-Identifier: GPL-2.0-only */
/* The one version string (--version, ttftrace_build_info, OTLP scope). */
#ifndef TTFTRACE_VERSION_H
#define TTFTRACE_VERSION_H

#define TTF_VERSION "0.1"
/* The commit it was built from (Makefile: git describe), "unknown" outside a git tree. */
#ifndef TTF_GIT_COMMIT
#define TTF_GIT_COMMIT "unknown"
#endif

#endif /* TTFTRACE_VERSION_H */
