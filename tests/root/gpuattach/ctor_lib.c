// SPDX-License-Identifier: GPL-2.0-only
/*
 * A library that misbehaves while it is being loaded, for the gpu-attach
 * tests: its constructor exits the process (-DCTOR_EXIT), kills it
 * (-DCTOR_KILL) or never returns in time (-DCTOR_HANG: sleeps 30 s).
 */
#include <signal.h>
#include <unistd.h>

__attribute__((constructor)) static void misbehave(void)
{
#if defined(CTOR_EXIT)
	_exit(3);
#elif defined(CTOR_KILL)
	kill(getpid(), SIGKILL);
	pause();
#elif defined(CTOR_HANG)
	sleep(30);
#endif
}
