// SPDX-License-Identifier: GPL-2.0-only
/* tracefs mount and event presence: see tracefs.h. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mount.h>
#include "user/probe/tracefs.h"

/* The two places libbpf reads events from (tracefs.h). */
static const char *const tracefs_paths[] = { TTF_TRACEFS_MOUNT, "/sys/kernel/debug/tracing" };

static int exists_in(const char *root, const char *rel)
{
	char path[256];

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int)sizeof(path))
		return 0;
	return access(path, F_OK) == 0;
}

static int exists(const char *rel)
{
	return exists_in(tracefs_paths[0], rel) || exists_in(tracefs_paths[1], rel);
}

const char *tracefs__root(const char *rel)
{
	for (size_t i = 0; i < sizeof(tracefs_paths) / sizeof(tracefs_paths[0]); i++)
		if (exists_in(tracefs_paths[i], rel))
			return tracefs_paths[i];
	return NULL;
}

int tracefs__ensure(void)
{
	if (exists("events"))
		return 0;
	if (mount("nodev", TTF_TRACEFS_MOUNT, "tracefs", 0, NULL))
		return -errno;
	return 1;
}

void tracefs__unmount(void)
{
	umount2(TTF_TRACEFS_MOUNT, MNT_DETACH);
}

int tracefs__has_event(const char *system, const char *name)
{
	char rel[160];

	if (snprintf(rel, sizeof(rel), "events/%s/%s/id", system, name) >= (int)sizeof(rel))
		return 0;
	return exists(rel);
}
