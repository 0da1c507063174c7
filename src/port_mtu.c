/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's MTU and frame limit: what every driver shares of tide_port_mtu_get/set (the
 * range check, the drivers that cannot change it or only while stopped) and the limits a
 * driver states at open (tide_port_frame_limit). The rules: tide/port.h.
 */
#include <errno.h>

#include "driver.h"
#include "log.h"

void tide_port_frame_limit(struct tide_port *p, unsigned max_frame)
{
	p->info.max_frame = max_frame;
	p->info.min_mtu = TIDE_MIN_MTU;
	p->info.max_mtu = max_frame - TIDE_FRAME_OVERHEAD;
	p->info.mtu = p->info.max_mtu < TIDE_DEFAULT_MTU ? p->info.max_mtu : TIDE_DEFAULT_MTU;
}

int tide_port_mtu_set_keep(struct tide_port *p, unsigned mtu)
{
	(void)p;
	(void)mtu;
	return 0;
}

int tide_port_mtu_get(const struct tide_port *p, unsigned *mtu)
{
	if (p == NULL || mtu == NULL)
		return -EINVAL;
	return p->drv->mtu_get ? p->drv->mtu_get(p, mtu) : (*mtu = p->info.mtu, 0);
}

int tide_port_mtu_set(struct tide_port *p, unsigned mtu)
{
	unsigned cur;
	int rc;

	if (p == NULL)
		return -EINVAL;
	if (mtu < p->info.min_mtu || mtu > p->info.max_mtu) {
		TIDE_LOG_ERR_(p->name, "mtu %u: out of range %u..%u (frames up to %u bytes)", mtu,
			      p->info.min_mtu, p->info.max_mtu, p->info.max_frame);
		return -EINVAL;
	}
	rc = tide_port_mtu_get(p, &cur);
	if (rc < 0)
		return rc;
	if (mtu == cur)
		return 0;
	if (p->drv->mtu_set == NULL) {
		TIDE_LOG_ERR_(p->name, "mtu %u: the %s driver cannot change its MTU (%u)", mtu,
			      p->drv->name, cur);
		return -ENOTSUP; /* no mtu_set: the driver's MTU is stated elsewhere */
	}
	if (p->drv->mtu_stopped_only && p->started) {
		TIDE_LOG_ERR_(p->name, "mtu %u: the %s driver changes its MTU only while the port is stopped",
			      mtu, p->drv->name);
		return -EBUSY;
	}
	rc = p->drv->mtu_set(p, mtu);
	if (rc < 0)
		return rc;
	p->info.mtu = mtu;
	return 0;
}
