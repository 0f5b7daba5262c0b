// SPDX-License-Identifier: GPL-2.0-only
#include "user/lib/log.h"
#include "user/probe/source.h"

int probe_source__warn_missing(const struct ttf_probe_source *s)
{
	struct ttf_probe_feature f[TTF_PROBE_MAX_FEATURES];
	int n, missing = 0;

	if (!s->features)
		return 0;
	n = s->features(s->ctx, f, TTF_PROBE_MAX_FEATURES);
	for (int i = 0; i < n; i++) {
		if (f[i].present || !f[i].lost)
			continue;
		ttf_warn("%s not attached: %s", f[i].name, f[i].lost);
		missing++;
	}
	return missing;
}
