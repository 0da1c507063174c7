/* SPDX-License-Identifier: BSD-3-Clause */
/* Link events (tide_port_link_event_fd): an eventfd per port, written by the drivers. */
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "driver.h"

int tide_port_link_event_fd(struct tide_port *p)
{
	int fd = __atomic_load_n(&p->link_efd, __ATOMIC_ACQUIRE);

	if (fd >= 0)
		return fd;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Release: pairs with the acquire in tide_port_link_changed(); a driver thread that
	 * sees the fd sees it open. */
	__atomic_store_n(&p->link_efd, fd, __ATOMIC_RELEASE);
	return fd;
}

void tide_port_link_changed(struct tide_port *p)
{
	int fd = __atomic_load_n(&p->link_efd, __ATOMIC_ACQUIRE);
	uint64_t one = 1;
	ssize_t w;

	if (fd < 0)
		return;
	/* Non-blocking: a counter at its maximum (nobody reads) fails with EAGAIN and the fd
	 * stays readable, which is all an event says. */
	w = write(fd, &one, sizeof(one));
	(void)w;
}
