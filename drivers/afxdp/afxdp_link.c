/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP driver: the interface the port is bound to. Facts read through ioctls (queues,
 * flags, MTU), the link state and its events, which come from a NETLINK_ROUTE socket
 * subscribed to RTNLGRP_LINK: the port opens it and tide_port_poll_ctl() reads it, as
 * memif's control plane is served (info.needs_poll_ctl is 1). Control thread.
 */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "afxdp.h"
#include "log.h"

int afxdp_dev_ioctl(const char *dev, unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return -errno;
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", dev);
	rc = ioctl(fd, req, ifr) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int afxdp_dev_queues(const char *dev)
{
	struct ethtool_channels ch = {.cmd = ETHTOOL_GCHANNELS};
	struct ifreq ifr = {.ifr_data = (void *)&ch};
	int rc = afxdp_dev_ioctl(dev, SIOCETHTOOL, &ifr);

	if (rc < 0)
		return rc;
	return (int)(ch.combined_count + ch.rx_count);
}

/* Up when the interface is administratively up and operationally running (carrier: a
 * veth whose peer is down is not); gone, or replaced by another of the same name: down. */
static int dev_up(const struct afxdp_port *ap)
{
	struct ifreq ifr = {0};

	if ((int)if_nametoindex(ap->dev) != ap->ifindex)
		return 0;
	if (afxdp_dev_ioctl(ap->dev, SIOCGIFFLAGS, &ifr) < 0)
		return 0;
	return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
}

int afxdp_link_get(struct tide_port *p, struct tide_link *out)
{
	out->up = dev_up(p->priv);
	out->speed_mbps = 0;
	return 0;
}

/* ---- link events ---- */

int afxdp_nl_open(struct afxdp_port *ap)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		TIDE_LOG_ERR_(ap->port->name, "dev=%s: netlink socket for link events: %s", ap->dev,
			      strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	ap->nl_fd = fd;
	/* After the subscription: a change from here on is either in the socket or seen now. */
	ap->nl_up = dev_up(ap);
	return 0;
}

void afxdp_nl_close(struct afxdp_port *ap)
{
	if (ap->nl_fd >= 0)
		close(ap->nl_fd);
	ap->nl_fd = -1;
}

/* The state one RTM_NEWLINK/RTM_DELLINK message gives our interface, or -1 when it is
 * about another one. The message was checked to hold a struct ifinfomsg. */
static int msg_state(const struct afxdp_port *ap, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);

	if (ifi->ifi_index != ap->ifindex)
		return -1;
	if (h->nlmsg_type == RTM_DELLINK)
		return 0;
	return (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_RUNNING);
}

/* Set the state; a change fires the port's link event. */
static void state_set(struct afxdp_port *ap, int up)
{
	if (up == ap->nl_up)
		return;
	ap->nl_up = up;
	TIDE_LOG_INFO_(ap->port->name, "dev=%s: link %s", ap->dev, up ? "up" : "down");
	tide_port_link_changed(ap->port);
}

int afxdp_poll_ctl(struct tide_port *p)
{
	struct afxdp_port *ap = p->priv;
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	ssize_t n;

	if (ap->nl_fd < 0)
		return 0;
	while ((n = recv(ap->nl_fd, buf, sizeof(buf), 0)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				/* Messages were lost: ask the interface itself. */
				state_set(ap, dev_up(ap));
				continue;
			}
			return errno == EAGAIN ? 0 : -errno;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			int up;

			if ((h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
				continue;
			up = msg_state(ap, h);
			if (up >= 0)
				state_set(ap, up);
		}
	}
	return 0;
}

/* ---- MTU: the interface's own ---- */

int afxdp_mtu_get(const struct tide_port *p, unsigned *mtu)
{
	const struct afxdp_port *ap = p->priv;
	struct ifreq ifr = {0};
	int rc = afxdp_dev_ioctl(ap->dev, SIOCGIFMTU, &ifr);

	if (rc < 0)
		return rc;
	*mtu = (unsigned)ifr.ifr_mtu;
	return 0;
}

int afxdp_mtu_set(struct tide_port *p, unsigned mtu)
{
	struct afxdp_port *ap = p->priv;
	struct ifreq ifr = {.ifr_mtu = (int)mtu};
	int rc = afxdp_dev_ioctl(ap->dev, SIOCSIFMTU, &ifr);

	if (rc < 0)
		TIDE_LOG_ERR_(p->name, "dev=%s: mtu %u: SIOCSIFMTU: %s", ap->dev, mtu,
			      strerror(-rc));
	return rc;
}
