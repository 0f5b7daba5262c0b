// SPDX-License-Identifier: GPL-2.0-only
/* The library of the docs/cases.md #2 and dlopen tests: one exported function. */
__attribute__((noinline)) int hot_lib(int x)
{
	__asm__ volatile("");
	return x + 7;
}
