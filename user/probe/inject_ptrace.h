/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Calling a function inside another process through one of its threads, with
 * ptrace(2) (x86-64 only; elsewhere every call returns -EOPNOTSUPP). The
 * facts this relies on are in docs/cupti.md A9:
 *   - PTRACE_SEIZE does not stop the thread; PTRACE_INTERRUPT stops it with
 *     PTRACE_EVENT_STOP, also out of a blocking system call;
 *   - every wait is bounded: waitpid(WNOHANG) polled until a deadline;
 *   - the call follows the System V x86-64 ABI: arguments in rdi, rsi, rdx,
 *     rcx, r8, r9; rsp 16-byte aligned before the call, so 8 mod 16 at the
 *     function's first instruction; the 128-byte red zone below rsp left
 *     alone; the direction flag clear;
 *   - the return address pushed is 0: the function's ret faults at rip 0,
 *     the SIGSEGV is caught in signal-delivery-stop and never delivered. No
 *     code byte of the process is written;
 *   - the general registers and the FPU/SSE/AVX state (NT_X86_XSTATE) are
 *     saved first and restored before detaching, with orig_rax: a system
 *     call that was interrupted (rax -ERESTARTSYS and kin) is restarted by
 *     the kernel as after a signal.
 *
 * Lifecycle: inject_ptrace__seize() -> inject_ptrace__call()... ->
 * inject_ptrace__release() on every path (it restores and detaches; after
 * the thread is gone it only forgets it).
 */
#ifndef TTFTRACE_INJECT_PTRACE_H
#define TTFTRACE_INJECT_PTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INJECT_RED_ZONE_BYTES 128	/* System V x86-64 ABI, 3.2.2 */
#define INJECT_XSTATE_MAX_BYTES 16384	/* XSAVE area, AVX-512 and AMX tiles included */
#define INJECT_BLOB_MAX_BYTES 4096	/* data copied onto the thread's stack for one call */

struct inject_regs {
	/* struct user_regs_struct (sys/user.h), as 27 words: kept opaque here */
	uint64_t gp[27];
	uint8_t xstate[INJECT_XSTATE_MAX_BYTES];
	size_t xstate_bytes;		/* 0: not saved (the kernel refused NT_X86_XSTATE) */
	bool fpregs;			/* xstate holds NT_PRFPREG (512 bytes) instead */
};

struct inject_thread {
	pid_t tid;
	bool seized;			/* we are its tracer */
	bool stopped;			/* in a ptrace-stop now */
	bool gone;			/* it exited (or was killed) while we held it */
	bool clobbered;			/* a call did not finish: its restart block is suspect */
	struct inject_regs saved;	/* at the first stop */
	uint64_t stopped_at_ns;		/* CLOCK_MONOTONIC of the first stop */
	uint64_t held_ns;		/* set by release: first stop to detach */
	int exit_status;		/* waitpid status when gone */
};

/* A function call in the target. */
struct inject_call {
	uint64_t fn;			/* its address in the target */
	uint64_t args[6];		/* rdi, rsi, rdx, rcx, r8, r9 */
	uint32_t blob_args;		/* bit i: args[i] is an offset into blob, made an address */
	const void *blob;		/* copied below the red zone for the call, then restored */
	size_t blob_bytes;		/* <= INJECT_BLOB_MAX_BYTES */
	int timeout_ms;			/* the call must return within this */
};

/*
 * Seize thread tid, interrupt it and wait up to timeout_ms for it to stop;
 * save its registers. Returns 0; -EPERM/-EACCES (ptrace not allowed), -ESRCH
 * (no such thread), -ECHILD (it exited before stopping), -EAGAIN (the
 * process is in group-stop: SIGSTOP), -ETIMEDOUT (no stop: the thread is
 * released again). On error nothing is left attached.
 */
int inject_ptrace__seize(pid_t tid, int timeout_ms, struct inject_thread *t);

/*
 * Whether the saved registers show a thread stopped out of a blocking system
 * call (orig_rax >= 0 and rax one of -ERESTARTSYS, -ERESTARTNOINTR,
 * -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK or -EINTR): it is not in the
 * middle of user code, so it is not inside malloc() or the dynamic loader.
 * *nr (may be NULL) gets the system call number.
 */
bool inject_ptrace__in_blocking_syscall(const struct inject_thread *t, long *nr);

/*
 * Run one call on the stopped thread and wait for its return; *ret gets rax.
 * The thread is stopped again afterwards, with the saved registers still to
 * be restored by release. Returns 0; -ECHILD (the process exited during the
 * call: t->gone), -EFAULT (it faulted elsewhere than the return address:
 * the fault is suppressed), -ETIMEDOUT (no return within timeout_ms: the
 * thread is interrupted and t->clobbered set), -EIO (ptrace failed),
 * -EINVAL (blob too large).
 */
int inject_ptrace__call(struct inject_thread *t, const struct inject_call *c, uint64_t *ret);

/* Read a NUL-terminated string of at most len - 1 bytes at addr in the target. 0 or -errno. */
int inject_ptrace__read_str(struct inject_thread *t, uint64_t addr, char *buf, size_t len);

/*
 * Restore the saved registers and detach (a no-op for what is not held).
 * When a call did not finish (t->clobbered), a restart-block system call
 * (nanosleep, poll with a timeout, ...) returns -EINTR instead of being
 * restarted with another call's restart data. Returns 0 or -errno (the
 * thread is released either way: the kernel detaches when we exit).
 */
int inject_ptrace__release(struct inject_thread *t);

#endif /* TTFTRACE_INJECT_PTRACE_H */
