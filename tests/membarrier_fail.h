/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A membarrier() that fails after the probe (src/quiesce.h), for the test binaries that
 * check the fallback to a grace period. The library calls syscall(__NR_membarrier, cmd, 0,
 * 0); the syscall() defined here, in the test binary, comes first. Armed (mb_errno set), it
 * fails the two barrier commands with mb_errno, as a seccomp filter installed after the
 * probe would, and counts them in mb_failed; the probe's commands and every other call go to
 * the C library. Include it in one file of a test binary.
 */
#ifndef TIDE_TEST_MEMBARRIER_FAIL_H
#define TIDE_TEST_MEMBARRIER_FAIL_H

#include <dlfcn.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

static int mb_errno;       /* armed: fail with this errno (atomic) */
static unsigned mb_failed; /* barrier commands failed so far (atomic) */

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, nr);
	if (nr == __NR_membarrier) {
		int cmd = va_arg(ap, int);
		unsigned flags = va_arg(ap, unsigned);
		int cpu = va_arg(ap, int);
		int e = __atomic_load_n(&mb_errno, __ATOMIC_RELAXED);

		va_end(ap);
		if (e && (cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED || cmd == MEMBARRIER_CMD_GLOBAL)) {
			__atomic_add_fetch(&mb_failed, 1, __ATOMIC_RELAXED);
			errno = e;
			return -1;
		}
		a[0] = cmd, a[1] = flags, a[2] = cpu, a[3] = a[4] = a[5] = 0;
	} else {
		for (int i = 0; i < 6; i++)
			a[i] = va_arg(ap, long);
		va_end(ap);
	}
	if (real == NULL)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

#endif /* TIDE_TEST_MEMBARRIER_FAIL_H */
