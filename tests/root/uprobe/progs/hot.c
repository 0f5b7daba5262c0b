// SPDX-License-Identifier: GPL-2.0-only
/*
 * docs/cases.md #1 target: after one byte on stdin, calls the exported hot(i) for
 * i = 0 .. N-1 (N = argv[1]) and prints the sum. Built -pie and -no-pie,
 * stripped, with -rdynamic so hot stays in .dynsym.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) int hot(int x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	long sum = 0;
	char c;

	if (read(0, &c, 1) != 1)
		return 1;
	for (int i = 0; i < n; i++)
		sum += hot(i);
	printf("%ld\n", sum);
	return 0;
}
