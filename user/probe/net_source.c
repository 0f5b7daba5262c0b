// SPDX-License-Identifier: GPL-2.0-only
/* Which network source to load (see net_probe.h): names and the automatic choice. */
#include <errno.h>
#include <string.h>
#include "user/probe/net_probe.h"
#include "user/probe/tp_check.h"

static const char *const names[] = {
	[NET_SOURCE_AUTO] = "auto",
	[NET_SOURCE_SOCK] = "sock",
	[NET_SOURCE_SYSCALL] = "syscall",
};

int net_source__parse(const char *name, enum net_source *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *net_source__name(enum net_source s)
{
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

enum net_source net_source__choose(enum net_source forced, const struct btf *vmlinux)
{
	if (forced != NET_SOURCE_AUTO)
		return forced;
	if (!vmlinux)
		return NET_SOURCE_SOCK;
	if (tp_check__has(vmlinux, "sys_enter") && tp_check__has(vmlinux, "sock_recv_length") &&
	    tp_check__has(vmlinux, "sock_send_length"))
		return NET_SOURCE_SOCK;
	return NET_SOURCE_SYSCALL;
}
