// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: the engine-profile parser (user/probe/profile.c, inih)
 * and the --probe spec parser. Input: profile text (seeds: the profiles/
 * directory's files and variants, tests/noroot/fuzz/make_elf_seeds.py). Per input: the text parsed
 * as a profile from memory and through profile__load_file (a memfd, so NUL
 * bytes and the file reader are covered), then each line as a --probe
 * spec, an ARGSPEC and a batch layout. Checks (abort): every string of a
 * parsed profile is terminated inside its field, counts are in range, a
 * failure leaves a message, both paths agree on text without NUL bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "user/probe/profile.h"

#define TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

static int mfd = -1;
static char mpath[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mfd = memfd_create("fuzz_profile", MFD_CLOEXEC);
	if (mfd < 0)
		abort();
	snprintf(mpath, sizeof(mpath), "/proc/self/fd/%d", mfd);
	return 0;
}

static void check_spec(const struct probe_spec *s)
{
	if (!TERMINATED(s->name) || !TERMINATED(s->symbol) || !TERMINATED(s->path) ||
	    !s->symbol[0] || s->role < TTF_ROLE_STEP || s->role >= TTF_ROLE__MAX ||
	    !strcmp(ttf_role__name(s->role), "?"))
		abort();
}

static void check_profile(const struct engine_profile *p)
{
	if (!TERMINATED(p->name) || !p->name[0] || p->n_match < 1 ||
	    p->n_match > PROFILE_MAX_MATCH || p->n_probes < 0 || p->n_probes > PROFILE_MAX_PROBES)
		abort();
	for (int i = 0; i < p->n_match; i++)
		if (!TERMINATED(p->match[i]) || !p->match[i][0])
			abort();
	for (int i = 0; i < p->n_probes; i++)
		check_spec(&p->probes[i]);
}

static void one_line(const char *line)
{
	struct ttf_engine_probe_cfg cfg;
	struct ttf_batch_layout l;
	struct probe_spec s;
	char err[512] = "";

	if (probe_spec__parse(line, &s, err, sizeof(err)) == 0)
		check_spec(&s);
	else if (!err[0] || !TERMINATED(err))
		abort();
	if (probe_arg__parse(line, &cfg) == 0 && cfg.arg_kind == TTF_ARG_REG_I32 &&
	    (cfg.arg_index < 1 || cfg.arg_index > 5))
		abort();
	(void)probe_batch__parse(line, &l);
	(void)ttf_role__parse(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct engine_profile p1, p2;
	char err1[512], err2[512];
	char *text = malloc(size + 1);
	int r1, r2;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r1 = profile__parse_string(text, "fuzz.ini", &p1, err1, sizeof(err1));
	if (r1 == 0)
		check_profile(&p1);
	else if (r1 != -EINVAL || !err1[0])
		abort();

	if ((size && pwrite(mfd, data, size, 0) != (ssize_t)size) || ftruncate(mfd, size))
		abort();
	r2 = profile__load_file(mpath, &p2, err2, sizeof(err2));
	if (r2 == 0)
		check_profile(&p2);
	else if (!err2[0])
		abort();
	/* the same text from memory and from a file: the same outcome (the file name differs) */
	if (!memchr(data, '\0', size) && ((r1 == 0) != (r2 == 0) ||
	    (r1 == 0 && (p1.n_probes != p2.n_probes || p1.n_match != p2.n_match))))
		abort();

	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		one_line(line);
	free(text);
	return 0;
}
