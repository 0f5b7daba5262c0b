/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Starting the process's one collector, shared by the two ways the library
 * arrives: CUDA_INJECTION64_PATH (InitializeInjection, inject.c) and a
 * dlopen() by `ttftrace gpu-attach` (ttftrace_cupti_attach, attach.c;
 * docs/cupti.md A9).
 */
#ifndef TTFTRACE_CUPTI_INJECT_H
#define TTFTRACE_CUPTI_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Internal to libttftrace-cupti.so: keep out of the host process's symbol space. */
#pragma GCC visibility push(hidden)

/*
 * Claim the collector of this process: true for the first caller only, so
 * that an injected-at-start library that is later attached to (or attached
 * twice) never starts a second one.
 */
bool cupti_inject__claim(void);

/*
 * Load libcupti, create and start the collector with the settings of the
 * environment (inject.c lists them), sending to sock_path (NULL: the
 * environment's or the default socket; the string must outlive the
 * collector). On success *cupti_version (may be NULL) gets cuptiGetVersion().
 * Returns 0, -ECANCELED (TTFTRACE_CUPTI_DISABLE), -ENOENT/-ENOSYS (no usable
 * libcupti), or the collector's errors (-EBUSY, -EPERM, -EIO, -ENOMEM);
 * why gets one line on failure.
 */
int cupti_inject__start(const char *sock_path, uint32_t *cupti_version, char *why,
			size_t why_len);

#pragma GCC visibility pop

#endif /* TTFTRACE_CUPTI_INJECT_H */
