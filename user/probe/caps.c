// SPDX-License-Identifier: GPL-2.0-only
/* Effective capabilities from /proc/self/status: see caps.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/probe/caps.h"

int caps__parse_status(const char *text, uint64_t *mask)
{
	const char *p;
	char *end;

	if (!strncmp(text, "CapEff:", 7))
		p = text + 7;
	else if ((p = strstr(text, "\nCapEff:")))
		p += 8;
	else
		return -EINVAL;
	while (*p == ' ' || *p == '\t')
		p++;
	errno = 0;
	*mask = strtoull(p, &end, 16);
	if (end == p || errno || (*end != '\n' && *end != '\0'))
		return -EINVAL;
	return 0;
}

int caps__effective(uint64_t *mask)
{
	char buf[8192];
	FILE *f = fopen("/proc/self/status", "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return caps__parse_status(buf, mask);
}

int caps__check_bpf(uint64_t mask, char *missing, size_t missing_len)
{
	if (caps__has(mask, TTF_CAP_SYS_ADMIN) ||
	    (caps__has(mask, TTF_CAP_BPF) && caps__has(mask, TTF_CAP_PERFMON)))
		return 0;
	snprintf(missing, missing_len, "%s%s%s",
		 caps__has(mask, TTF_CAP_BPF) ? "" : "CAP_BPF",
		 !caps__has(mask, TTF_CAP_BPF) && !caps__has(mask, TTF_CAP_PERFMON) ? ", " : "",
		 caps__has(mask, TTF_CAP_PERFMON) ? "" : "CAP_PERFMON");
	return -EPERM;
}
