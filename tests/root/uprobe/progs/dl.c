// SPDX-License-Identifier: GPL-2.0-only
/*
 * dlopen target: reads one byte, dlopens LIB (argv[2]; "-" for none),
 * prints "loaded", reads a second byte, then calls hot_lib(i) N (argv[1])
 * times and prints the sum. With LIB "-" it only waits for the bytes.
 * With a LIB2 (argv[3]), after the second byte it dlopens LIB2 too, prints
 * "loaded2" and reads a third byte before the calls.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int (*fn)(int) = NULL;
	int n = atoi(argv[1]);
	long sum = 0;
	void *h = NULL;
	char c;

	if (read(0, &c, 1) != 1)
		return 1;
	if (strcmp(argv[2], "-")) {
		h = dlopen(argv[2], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		fn = (int (*)(int))dlsym(h, "hot_lib");
	}
	printf("loaded\n");
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	if (argc > 3) {
		if (!dlopen(argv[3], RTLD_NOW)) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		printf("loaded2\n");
		fflush(stdout);
		if (read(0, &c, 1) != 1)
			return 1;
	}
	for (int i = 0; fn && i < n; i++)
		sum += fn(i);
	printf("%ld\n", sum);
	return 0;
}
