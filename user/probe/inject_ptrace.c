// SPDX-License-Identifier: GPL-2.0-only
/* A function call in another process's thread through ptrace: see inject_ptrace.h. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "user/probe/inject_ptrace.h"

#if defined(__x86_64__)

#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

_Static_assert(sizeof(struct user_regs_struct) == sizeof(((struct inject_regs *)0)->gp),
	       "inject_regs.gp holds struct user_regs_struct");

/*
 * Kernel-internal errno values a system call interrupted by a signal (or a
 * ptrace stop) leaves in rax until the kernel restarts it (include/linux/errno.h,
 * docs/cupti.md A9). Never seen by user code.
 */
#define K_ERESTARTSYS 512
#define K_ERESTARTNOINTR 513
#define K_ERESTARTNOHAND 514
#define K_ERESTART_RESTARTBLOCK 516

#define EFLAGS_DF 0x400ull		/* direction flag: clear at every call (SysV ABI) */
#define POLL_NS 100000L			/* waitpid(WNOHANG) poll period */
#define STOP_GRACE_MS 1000		/* to stop a thread again after a call timed out */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static struct user_regs_struct *gp(struct inject_regs *r)
{
	return (struct user_regs_struct *)r->gp;
}

static void mark_gone(struct inject_thread *t, int status)
{
	t->gone = true;
	t->stopped = false;
	t->seized = false;
	t->exit_status = status;
}

/*
 * Wait for the next ptrace event of t until deadline_ns (never blocks: polls
 * waitpid with WNOHANG). 0 with *status, -ETIMEDOUT, -ECHILD (exited).
 */
static int wait_event(struct inject_thread *t, uint64_t deadline_ns, int *status)
{
	struct timespec nap = { 0, POLL_NS };
	pid_t r;

	for (;;) {
		r = waitpid(t->tid, status, __WALL | WNOHANG);
		if (r == t->tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
				mark_gone(t, *status);
				return -ECHILD;
			}
			if (WIFSTOPPED(*status)) {
				t->stopped = true;
				return 0;
			}
			continue;
		}
		if (r < 0 && errno != EINTR) {
			if (errno == ECHILD) {
				mark_gone(t, 0);
				return -ECHILD;
			}
			return -errno;
		}
		if (mono_ns() >= deadline_ns)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
	}
}

static int resume(struct inject_thread *t, int sig)
{
	if (ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig))
		return -errno;
	t->stopped = false;
	return 0;
}

static int get_regs(pid_t tid, struct inject_regs *r)
{
	struct iovec iov = { r->xstate, sizeof(r->xstate) };

	if (ptrace(PTRACE_GETREGS, tid, 0, gp(r)))
		return -errno;
	r->fpregs = false;
	r->xstate_bytes = 0;
	if (!ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov)) {
		r->xstate_bytes = iov.iov_len;
	} else if (!ptrace(PTRACE_GETFPREGS, tid, 0, r->xstate)) {
		r->fpregs = true;
		r->xstate_bytes = sizeof(struct user_fpregs_struct);
	}
	return 0;
}

static int set_regs(pid_t tid, struct inject_regs *r)
{
	struct iovec iov = { r->xstate, r->xstate_bytes };

	if (ptrace(PTRACE_SETREGS, tid, 0, gp(r)))
		return -errno;
	if (r->xstate_bytes && !r->fpregs &&
	    ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov))
		return -errno;
	if (r->fpregs && ptrace(PTRACE_SETFPREGS, tid, 0, r->xstate))
		return -errno;
	return 0;
}

static int mem_rw(pid_t tid, uint64_t addr, void *buf, size_t n, bool write)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	ssize_t r = write ? process_vm_writev(tid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(tid, &local, 1, &remote, 1, 0);

	if (r < 0)
		return -errno;
	return (size_t)r == n ? 0 : -EFAULT;
}

int inject_ptrace__seize(pid_t tid, int timeout_ms, struct inject_thread *t)
{
	uint64_t deadline;
	int err, st;

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0))
		return -errno;
	t->seized = true;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -errno; /* still seized and running: the kernel detaches when we exit */
	deadline = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		err = wait_event(t, deadline, &st);
		if (err)
			return err;
		if (st >> 16 == PTRACE_EVENT_STOP) {
			if (WSTOPSIG(st) == SIGTRAP)
				break; /* our interrupt */
			/* group-stop: someone stopped the process; it stays stopped after detach */
			ptrace(PTRACE_DETACH, tid, 0, 0);
			t->seized = t->stopped = false;
			return -EAGAIN;
		}
		/* a signal arrived first (signal-delivery-stop): deliver it, wait for our stop */
		err = resume(t, WSTOPSIG(st));
		if (err)
			return err;
	}
	err = get_regs(tid, &t->saved);
	if (err) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		t->seized = t->stopped = false;
		return err;
	}
	t->stopped_at_ns = mono_ns();
	return 0;
}

bool inject_ptrace__in_blocking_syscall(const struct inject_thread *t, long *nr)
{
	const struct user_regs_struct *r = (const void *)t->saved.gp;
	long ax = (long)r->rax;

	if (nr)
		*nr = (long)r->orig_rax;
	if ((long)r->orig_rax < 0)
		return false;
	return ax == -K_ERESTARTSYS || ax == -K_ERESTARTNOINTR || ax == -K_ERESTARTNOHAND ||
	       ax == -K_ERESTART_RESTARTBLOCK || ax == -EINTR;
}

/* After a timeout: stop the thread again, whatever it is doing. */
static int stop_again(struct inject_thread *t)
{
	uint64_t deadline = mono_ns() + STOP_GRACE_MS * 1000000ull;
	int st;

	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0))
		return -errno;
	return wait_event(t, deadline, &st); /* any stop will do */
}

int inject_ptrace__call(struct inject_thread *t, const struct inject_call *c, uint64_t *ret)
{
	uint8_t save[INJECT_BLOB_MAX_BYTES + 64], img[INJECT_BLOB_MAX_BYTES + 64];
	struct inject_regs call = t->saved;
	struct user_regs_struct *r = gp(&call), cur;
	uint64_t top, blob, sp, deadline;
	uint64_t *args[6] = { (uint64_t *)&r->rdi, (uint64_t *)&r->rsi, (uint64_t *)&r->rdx,
			      (uint64_t *)&r->rcx, (uint64_t *)&r->r8, (uint64_t *)&r->r9 };
	size_t span;
	int err, st, sig;

	if (!t->seized || !t->stopped || t->gone)
		return -EIO;
	if (c->blob_bytes > INJECT_BLOB_MAX_BYTES)
		return -EINVAL;
	/* Below the red zone: [sp] = return address 0, 16 bytes of gap, the blob. */
	top = r->rsp - INJECT_RED_ZONE_BYTES;
	blob = (top - c->blob_bytes) & ~15ull;
	sp = blob - 16 - 8; /* 16-aligned before the "call", 8 mod 16 at the function's entry */
	span = top - sp;
	err = mem_rw(t->tid, sp, save, span, false);
	if (err)
		return err;
	memcpy(img, save, span);
	memset(img, 0, 24);
	if (c->blob_bytes)
		memcpy(img + (blob - sp), c->blob, c->blob_bytes);
	err = mem_rw(t->tid, sp, img, span, true);
	if (err)
		return err;

	r->rip = c->fn;
	r->rsp = sp;
	for (int i = 0; i < 6; i++)
		*args[i] = c->blob_args & (1u << i) ? blob + c->args[i] : c->args[i];
	r->rax = 0;
	r->orig_rax = (unsigned long)-1; /* not in a system call: no restart on resume */
	r->eflags &= ~EFLAGS_DF;
	call.xstate_bytes = 0; /* the callee may use the FPU state as it finds it */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, r))
		return -EIO;
	err = resume(t, 0);
	if (err)
		return -EIO;
	deadline = mono_ns() + (uint64_t)c->timeout_ms * 1000000ull;
	for (;;) {
		err = wait_event(t, deadline, &st);
		if (err == -ECHILD)
			return err;
		if (err == -ETIMEDOUT) {
			t->clobbered = true;
			if (stop_again(t))
				return -ETIMEDOUT; /* not stopped: the stack cannot be put back */
			break;
		}
		if (err)
			return -EIO;
		if (st >> 16 == PTRACE_EVENT_STOP) {
			/* group-stop meanwhile: finish the call; the stop resumes at detach */
			if (resume(t, 0))
				return -EIO;
			continue;
		}
		sig = WSTOPSIG(st);
		if (sig == SIGSEGV) {
			if (ptrace(PTRACE_GETREGS, t->tid, 0, &cur))
				return -EIO;
			if (cur.rip == 0 && cur.rsp == sp + 8) {
				*ret = cur.rax; /* returned to our address 0: the SIGSEGV is never delivered */
				break;
			}
			err = -EFAULT; /* a fault inside the call: suppressed, the thread restored */
			t->clobbered = true;
			break;
		}
		/* a signal for the process: deliver it (a handler runs on top of the call) */
		if (resume(t, sig))
			return -EIO;
	}
	if (mem_rw(t->tid, sp, save, span, true) && !err)
		err = -EIO;
	return err ? err : t->clobbered ? -ETIMEDOUT : 0;
}

int inject_ptrace__read_str(struct inject_thread *t, uint64_t addr, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return -EINVAL;
	while (n + 1 < len) {
		/* byte by byte up to the page end, so that a string at a page's end reads */
		size_t chunk = 4096 - ((addr + n) & 4095);
		int err;

		if (chunk > len - 1 - n)
			chunk = len - 1 - n;
		err = mem_rw(t->tid, addr + n, buf + n, chunk, false);
		if (err)
			return err;
		if (memchr(buf + n, 0, chunk))
			return 0;
		n += chunk;
	}
	buf[n] = '\0';
	return 0;
}

int inject_ptrace__release(struct inject_thread *t)
{
	struct user_regs_struct *r = gp(&t->saved);
	int err = 0;

	if (!t->seized || t->gone)
		return 0;
	if (!t->stopped && (err = stop_again(t)))
		return err; /* left running and seized: the kernel detaches when we exit */
	if (t->clobbered && (long)r->orig_rax >= 0 && (long)r->rax == -K_ERESTART_RESTARTBLOCK)
		r->rax = (unsigned long)-EINTR;
	err = set_regs(t->tid, &t->saved);
	if (ptrace(PTRACE_DETACH, t->tid, 0, 0) && !err)
		err = -errno;
	t->held_ns = mono_ns() - t->stopped_at_ns;
	t->seized = t->stopped = false;
	return err;
}

#else /* !__x86_64__ */

int inject_ptrace__seize(pid_t tid, int timeout_ms, struct inject_thread *t)
{
	memset(t, 0, sizeof(*t));
	return -EOPNOTSUPP;
}

bool inject_ptrace__in_blocking_syscall(const struct inject_thread *t, long *nr)
{
	return false;
}

int inject_ptrace__call(struct inject_thread *t, const struct inject_call *c, uint64_t *ret)
{
	return -EOPNOTSUPP;
}

int inject_ptrace__read_str(struct inject_thread *t, uint64_t addr, char *buf, size_t len)
{
	return -EOPNOTSUPP;
}

int inject_ptrace__release(struct inject_thread *t)
{
	return 0;
}

#endif
