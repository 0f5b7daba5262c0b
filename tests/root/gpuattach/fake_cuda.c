// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in libcuda.so.1 for the gpu-attach tests (built with that soname
 * and preloaded into the target): cuDeviceGetCount() answers as an
 * initialised driver with one device (-DINITIALISED) or as one before cuInit
 * (CUDA_ERROR_NOT_INITIALIZED, 3).
 */
int cuDeviceGetCount(int *n)
{
#if defined(INITIALISED)
	*n = 1;
	return 0;
#else
	*n = 0;
	return 3;
#endif
}
