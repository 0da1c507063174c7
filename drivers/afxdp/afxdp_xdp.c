/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The XDP program of an AF_XDP port: tide's embedded XSKMAP redirect program (or the user's
 * prog=PATH), attached through a BPF link so that it goes away with the process, even after
 * kill -9 (a netlink-attached program would stay behind and be reused, in the wrong mode,
 * by the next socket).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include "afxdp.h"
#include "log.h"

extern const unsigned char afxdp_bpf_obj[];
extern const unsigned long afxdp_bpf_obj_len;


/* ---- library messages go to tide's log (debug level), only while tide calls them ---- */

static libbpf_print_fn_t saved_bpf_print;
static libxdp_print_fn_t saved_xdp_print;

static void lib_vlog(const char *comp, const char *fmt, va_list ap)
{
	char buf[512];
	size_t len;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	TIDE_LOG_DEBUG_(comp, "%s", buf);
}

static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	lib_vlog("libbpf", fmt, ap);
	return 0;
}

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	lib_vlog("libxdp", fmt, ap);
	return 0;
}

void afxdp_lib_log_begin(void)
{
	saved_bpf_print = libbpf_set_print(bpf_print);
	saved_xdp_print = libxdp_set_print(xdp_print);
}

void afxdp_lib_log_end(void)
{
	libbpf_set_print(saved_bpf_print);
	libxdp_set_print(saved_xdp_print);
}

/* ---- attach / detach ---- */

static const char *attach_mode_name(unsigned m)
{
	switch (m) {
	case XDP_ATTACHED_DRV:
		return "native";
	case XDP_ATTACHED_SKB:
		return "generic";
	case XDP_ATTACHED_HW:
		return "offload";
	case XDP_ATTACHED_MULTI:
		return "several modes";
	default:
		return "none";
	}
}

static int open_object(struct afxdp_port *ap, struct bpf_object **out)
{
	struct bpf_object *obj;
	int rc;

	if (ap->prog_path[0]) {
		obj = bpf_object__open_file(ap->prog_path, NULL);
	} else {
		LIBBPF_OPTS(bpf_object_open_opts, o, .object_name = "tide_xsk_redirect");
		obj = bpf_object__open_mem(afxdp_bpf_obj, afxdp_bpf_obj_len, &o);
	}
	rc = libbpf_get_error(obj);
	if (rc) {
		TIDE_LOG_ERR_(ap->port->name, "prog=%s: cannot open the BPF object: %s",
			      ap->prog_path[0] ? ap->prog_path : "default", strerror(-rc));
		return rc;
	}
	rc = bpf_object__load(obj);
	if (rc) {
		TIDE_LOG_ERR_(ap->port->name, "prog=%s: cannot load the BPF object: %s%s",
			      ap->prog_path[0] ? ap->prog_path : "default", strerror(-rc),
			      rc == -EPERM ? " (loading BPF programs needs root or CAP_BPF + CAP_NET_ADMIN)" : "");
		bpf_object__close(obj);
		return rc;
	}
	*out = obj;
	return 0;
}

int afxdp_prog_attach(struct afxdp_port *ap)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, qo);
	LIBBPF_OPTS(bpf_link_create_opts, lo);
	struct bpf_program *prog, *xdp = NULL;
	struct bpf_map *map, *xsks = NULL;
	struct bpf_object *obj;
	const char *name = ap->port->name;
	int rc, fd;

	/* Refuse an interface that already runs an XDP program: replacing it would break
	 * whoever attached it. Checked first so that the message can name it. */
	rc = bpf_xdp_query(ap->ifindex, 0, &qo);
	if (rc == 0 && qo.attach_mode != XDP_ATTACHED_NONE) {
		TIDE_LOG_ERR_(name, "dev=%s already runs an XDP program (id %u, %s); remove it first (ip link set dev %s xdpgeneric off; ip link set dev %s xdpdrv off) or bring your own with prog=PATH",
			      ap->dev, qo.prog_id, attach_mode_name(qo.attach_mode), ap->dev,
			      ap->dev);
		return -EBUSY;
	}
	rc = open_object(ap, &obj);
	if (rc < 0)
		return rc;
	bpf_object__for_each_program(prog, obj)
		if (xdp == NULL && bpf_program__type(prog) == BPF_PROG_TYPE_XDP)
			xdp = prog;
	bpf_object__for_each_map(map, obj)
		if (xsks == NULL && bpf_map__type(map) == BPF_MAP_TYPE_XSKMAP)
			xsks = map;
	if (xdp == NULL || xsks == NULL) {
		TIDE_LOG_ERR_(name, "prog=%s: the object needs an XDP program and an XSKMAP",
			      ap->prog_path);
		rc = -EINVAL;
		goto fail;
	}
	if (bpf_map__max_entries(xsks) < ap->queue + ap->nq) {
		TIDE_LOG_ERR_(name, "queue=%u, queues=%u: the program's XSKMAP has only %u entries",
			      ap->queue, ap->nq, bpf_map__max_entries(xsks));
		rc = -EINVAL;
		goto fail;
	}
	lo.flags = ap->mode == AFXDP_MODE_NATIVE    ? XDP_FLAGS_DRV_MODE
		   : ap->mode == AFXDP_MODE_GENERIC ? XDP_FLAGS_SKB_MODE
						    : 0;
	fd = bpf_link_create(bpf_program__fd(xdp), ap->ifindex, BPF_XDP, &lo);
	if (fd < 0) {
		rc = -errno;
		if (rc == -EPERM)
			TIDE_LOG_ERR_(name, "dev=%s: attaching XDP needs root (CAP_NET_ADMIN)",
				      ap->dev);
		else if (rc == -EBUSY || rc == -EEXIST)
			TIDE_LOG_ERR_(name, "dev=%s already runs an XDP program; remove it first or use prog=PATH",
				      ap->dev);
		else if (ap->mode == AFXDP_MODE_NATIVE)
			TIDE_LOG_ERR_(name, "dev=%s: native XDP refused (%s); try mode=generic (veth: the peer's MTU must be at most 3506)",
				      ap->dev, strerror(-rc));
		else
			TIDE_LOG_ERR_(name, "dev=%s: cannot attach XDP: %s", ap->dev,
				      strerror(-rc));
		goto fail;
	}
	ap->bpf_obj = obj;
	ap->link_fd = fd;
	ap->xsks_map_fd = bpf_map__fd(xsks);
	memset(&qo, 0, sizeof(qo));
	qo.sz = sizeof(qo);
	ap->attached_mode = bpf_xdp_query(ap->ifindex, 0, &qo) == 0
				    ? attach_mode_name(qo.attach_mode)
				    : "?";
	return 0;
fail:
	bpf_object__close(obj);
	return rc;
}

void afxdp_prog_detach(struct afxdp_port *ap)
{
	if (ap->link_fd >= 0)
		close(ap->link_fd); /* the link's last reference: the program comes off */
	ap->link_fd = -1;
	ap->xsks_map_fd = -1;
	if (ap->bpf_obj)
		bpf_object__close(ap->bpf_obj);
	ap->bpf_obj = NULL;
}
