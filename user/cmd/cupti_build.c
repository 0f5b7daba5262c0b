// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the build found for the CUPTI collector: the Makefile compiles this
 * file with TTF_CUPTI_BUILT (1 or 0), TTF_CUPTI_CUDA_HOME and TTF_CUPTI_NOTE
 * (why it was left out), and rebuilds it when they change.
 */
#include <limits.h>
#include <stdio.h>

#include "user/cmd/gpu_attach.h"

#ifndef TTF_CUPTI_BUILT
#define TTF_CUPTI_BUILT 0
#endif
#ifndef TTF_CUPTI_CUDA_HOME
#define TTF_CUPTI_CUDA_HOME ""
#endif
#ifndef TTF_CUPTI_NOTE
#define TTF_CUPTI_NOTE "built without the Makefile"
#endif

#define HOW_TO_BUILD "build it with `make CUDA_HOME=/path/to/cuda` (the CUDA toolkit's " \
		     "cupti.h and cuda.h)"

int gpu_attach__built(void)
{
	return TTF_CUPTI_BUILT;
}

void gpu_attach__build_line(FILE *f)
{
	char lib[PATH_MAX];

	if (TTF_CUPTI_BUILT && !gpu_attach__search_lib(lib, sizeof(lib)))
		fprintf(f, "cupti collector %s (CUDA headers from %s)\n", lib, TTF_CUPTI_CUDA_HOME);
	else if (TTF_CUPTI_BUILT)
		fprintf(f, "cupti collector %s not found (CUDA headers from %s): build it with "
			"`make`\n", GPU_ATTACH_LIB_NAME, TTF_CUPTI_CUDA_HOME);
	else
		fprintf(f, "cupti collector not built: %s; %s\n", TTF_CUPTI_NOTE, HOW_TO_BUILD);
}

void gpu_attach__build_note(FILE *f)
{
	if (!TTF_CUPTI_BUILT)
		fprintf(f, "GPU: the CUPTI collector was not built with this ttftrace (%s): no "
			"GPU spans; %s.\n", TTF_CUPTI_NOTE, HOW_TO_BUILD);
}
