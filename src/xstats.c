/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Extended statistics (tide/port.h, tide_xstats_*): the port's generic counters by name,
 * per queue too, then the driver's own (struct tide_driver.xstats). One walk serves names,
 * values and lookups, so the three always agree on order.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"

#define DRV_XSTATS_MAX 256 /* counters one driver may add */

struct generic {
	const char *name;
	size_t off; /* in struct tide_port_stats */
};

#define G(n, f) {n, offsetof(struct tide_port_stats, f)}
static const struct generic port_counters[] = {
	G("rx_good_packets", ipackets), G("rx_good_bytes", ibytes), G("rx_errors", ierrors),
	G("rx_nombuf", rx_nombuf),      G("rx_missed", rx_missed),  G("tx_good_packets", opackets),
	G("tx_good_bytes", obytes),     G("tx_errors", oerrors),    G("tx_hangs", tx_hangs),
	G("tx_released", tx_released),  G("tx_recycled", tx_recycled), G("rx_polls", rx_polls),
	G("rx_idle_polls", rx_idle_polls), G("tx_polls", tx_polls), G("tx_idle_polls", tx_idle_polls),
};
#undef G

#define Q(n, f) {n, offsetof(struct tide_queue_stats, f)}
static const struct generic rxq_counters[] = {
	Q("packets", packets), Q("bytes", bytes), Q("errors", errors), Q("nombuf", nombuf),
};
static const struct generic txq_counters[] = {
	Q("packets", packets), Q("bytes", bytes), Q("errors", errors),
};
#undef Q

#define N(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t at(const void *base, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)base + off, sizeof(v));
	return v;
}

/*
 * Visit every xstat of @p in order: @fn(arg, index, name, value). Returns the count. Names
 * of per-queue counters are formatted into a scratch buffer valid for the call only.
 */
static unsigned walk(struct tide_port *p,
		     void (*fn)(void *arg, unsigned i, const char *name, uint64_t value),
		     void *arg)
{
	struct tide_port_stats st = {.sz = sizeof(st)};
	const char *dnames[DRV_XSTATS_MAX];
	uint64_t dvals[DRV_XSTATS_MAX];
	char name[TIDE_XSTAT_NAME_SIZE];
	unsigned i = 0, nd = 0;

	tide_port_stats_get(p, &st);
	for (unsigned k = 0; k < N(port_counters); k++, i++)
		fn(arg, i, port_counters[k].name, at(&st, port_counters[k].off));
	for (unsigned q = 0; q < p->nb_rxq && q < TIDE_MAX_QUEUES; q++)
		for (unsigned k = 0; k < N(rxq_counters); k++, i++) {
			snprintf(name, sizeof(name), "rx_q%u_%s", q, rxq_counters[k].name);
			fn(arg, i, name, at(&st.rxq[q], rxq_counters[k].off));
		}
	for (unsigned q = 0; q < p->nb_txq && q < TIDE_MAX_QUEUES; q++)
		for (unsigned k = 0; k < N(txq_counters); k++, i++) {
			snprintf(name, sizeof(name), "tx_q%u_%s", q, txq_counters[k].name);
			fn(arg, i, name, at(&st.txq[q], txq_counters[k].off));
		}
	if (p->drv->xstats != NULL) {
		nd = p->drv->xstats(p, dnames, dvals, DRV_XSTATS_MAX);
		if (nd > DRV_XSTATS_MAX)
			nd = DRV_XSTATS_MAX;
	}
	for (unsigned k = 0; k < nd; k++, i++) {
		snprintf(name, sizeof(name), "%s_%s", p->drv->name, dnames[k]);
		fn(arg, i, name, dvals[k]);
	}
	return i;
}

struct fill {
	struct tide_xstat_name *names;
	uint64_t *values;
	unsigned n;
	const char *want;
	int found;
};

static void fill_name(void *arg, unsigned i, const char *name, uint64_t value)
{
	struct fill *f = arg;

	(void)value;
	if (i < f->n)
		snprintf(f->names[i].name, sizeof(f->names[i].name), "%s", name);
}

static void fill_value(void *arg, unsigned i, const char *name, uint64_t value)
{
	struct fill *f = arg;

	(void)name;
	if (i < f->n)
		f->values[i] = value;
}

static void find(void *arg, unsigned i, const char *name, uint64_t value)
{
	struct fill *f = arg;

	if (f->found < 0 && strcmp(name, f->want) == 0) {
		f->values[0] = value;
		f->found = (int)i;
	}
}

int tide_xstats_names_get(struct tide_port *p, struct tide_xstat_name *names, unsigned n)
{
	struct fill f = {.names = names, .n = names != NULL ? n : 0};

	if (p == NULL)
		return -EINVAL;
	return (int)walk(p, fill_name, &f);
}

int tide_xstats_get(struct tide_port *p, uint64_t *values, unsigned n)
{
	struct fill f = {.values = values, .n = values != NULL ? n : 0};

	if (p == NULL)
		return -EINVAL;
	return (int)walk(p, fill_value, &f);
}

int tide_xstats_get_by_name(struct tide_port *p, const char *name, uint64_t *value)
{
	struct fill f = {.values = value, .want = name, .found = -1};

	if (p == NULL || name == NULL || value == NULL)
		return -EINVAL;
	walk(p, find, &f);
	return f.found >= 0 ? 0 : -ENOENT;
}

int tide_xstats_reset(struct tide_port *p)
{
	if (p == NULL)
		return -EINVAL;
	tide_port_stats_reset(p);
	return 0;
}
