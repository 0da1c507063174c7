/* SPDX-License-Identifier: BSD-3-Clause */
/* The PCI layer through VFIO type1 (pci.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "pci.h"

#define PCI_COMMAND 0x04
#define PCI_COMMAND_MEMORY 0x2
#define PCI_COMMAND_MASTER 0x4

static char sysfs_root[PATH_MAX / 2] = "/sys/bus/pci";
static char vfio_root[PATH_MAX / 2] = "/dev/vfio";

void pci_set_roots(const char *sysfs_pci, const char *dev_vfio)
{
	snprintf(sysfs_root, sizeof(sysfs_root), "%s", sysfs_pci ? sysfs_pci : "/sys/bus/pci");
	snprintf(vfio_root, sizeof(vfio_root), "%s", dev_vfio ? dev_vfio : "/dev/vfio");
}

static int hexnum(const char *s, size_t n, unsigned max, unsigned *out)
{
	unsigned v = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
		v = v * 16 + d;
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int pci_bdf_parse(const char *s, char out[PCI_BDF_LEN])
{
	unsigned dom = 0, bus, dev, fn;
	size_t len = s ? strlen(s) : 0;

	if (len == 7) { /* BB:DD.F */
		if (s[2] != ':' || s[5] != '.')
			return -EINVAL;
	} else if (len == 12) { /* DDDD:BB:DD.F */
		if (s[4] != ':' || s[7] != ':' || s[10] != '.' || hexnum(s, 4, 0xffff, &dom) < 0)
			return -EINVAL;
		s += 5;
	} else {
		return -EINVAL;
	}
	if (hexnum(s, 2, 0xff, &bus) < 0 || hexnum(s + 3, 2, 0x1f, &dev) < 0 ||
	    hexnum(s + 6, 1, 7, &fn) < 0)
		return -EINVAL;
	snprintf(out, PCI_BDF_LEN, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

/* The last path component a sysfs link of the device points to ("" when there is none). */
static void dev_link(const char *bdf, const char *what, char *out, size_t n)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t k;
	const char *base;

	snprintf(path, sizeof(path), "%s/devices/%s/%s", sysfs_root, bdf, what);
	k = readlink(path, target, sizeof(target) - 1);
	out[0] = '\0';
	if (k <= 0)
		return;
	target[k] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) < n)
		memcpy(out, base, strlen(base) + 1);
}

static int read_hex_file(const char *bdf, const char *what, unsigned *out)
{
	char path[PATH_MAX], buf[32];
	FILE *f;
	unsigned long v;
	char *end;

	snprintf(path, sizeof(path), "%s/devices/%s/%s", sysfs_root, bdf, what);
	f = fopen(path, "r");
	if (f == NULL)
		return -errno;
	if (fgets(buf, sizeof(buf), f) == NULL) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	v = strtoul(buf, &end, 16);
	if (end == buf)
		return -EIO;
	*out = (unsigned)v;
	return 0;
}

static bool dev_exists(const char *bdf)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/devices/%s", sysfs_root, bdf);
	return access(path, F_OK) == 0;
}

static void log_no_device(const char *bdf)
{
	TIDE_LOG_ERR_("pci", "%s: no such PCI device (list them with: scripts/tide-devbind "
		      "--status, or lspci -D)", bdf);
}

int pci_id_read(const char *bdf, uint16_t *vendor, uint16_t *device)
{
	unsigned v, d;

	if (!dev_exists(bdf)) {
		log_no_device(bdf);
		return -ENODEV;
	}
	if (read_hex_file(bdf, "vendor", &v) < 0 || read_hex_file(bdf, "device", &d) < 0) {
		TIDE_LOG_ERR_("pci", "%s: cannot read its vendor/device ID from sysfs", bdf);
		return -EIO;
	}
	*vendor = (uint16_t)v;
	*device = (uint16_t)d;
	return 0;
}

/*
 * Check the sysfs side before touching VFIO, so that each failure gets its own message:
 * the device exists, is bound to vfio-pci, and has an IOMMU group. Returns the group
 * number or -errno (logged).
 */
static int sysfs_check(const char *bdf)
{
	char drv[64], grp[32], *end;
	unsigned g;

	if (!dev_exists(bdf)) {
		log_no_device(bdf);
		return -ENODEV;
	}
	dev_link(bdf, "driver", drv, sizeof(drv));
	if (strcmp(drv, "vfio-pci") != 0) {
		if (drv[0] == '\0')
			TIDE_LOG_ERR_("pci", "%s is bound to no driver, not vfio-pci: run "
				      "scripts/tide-devbind --bind=vfio-pci %s (as root)", bdf, bdf);
		else
			TIDE_LOG_ERR_("pci", "%s is bound to %s, not vfio-pci: run "
				      "scripts/tide-devbind --bind=vfio-pci %s (as root; it "
				      "takes the device away from %s)", bdf, drv, bdf, drv);
		return drv[0] == '\0' ? -ENODEV : -EBUSY;
	}
	dev_link(bdf, "iommu_group", grp, sizeof(grp));
	g = (unsigned)strtoul(grp, &end, 10);
	if (grp[0] == '\0' || *end != '\0' || g > INT_MAX) {
		TIDE_LOG_ERR_("pci", "%s has no IOMMU group: turn the IOMMU on (kernel command "
			      "line intel_iommu=on or amd_iommu=on, and VT-d/AMD-Vi in the "
			      "firmware), then bind it again", bdf);
		return -ENODEV;
	}
	return (int)g;
}

/* Log the devices that share @bdf's group and the driver of each. */
static void log_group_members(const char *bdf, int group)
{
	char path[PATH_MAX], list[512] = "";
	DIR *dir;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/devices/%s/iommu_group/devices", sysfs_root, bdf);
	dir = opendir(path);
	while (dir && (e = readdir(dir)) != NULL) {
		char drv[64];
		size_t used = strlen(list);

		if (e->d_name[0] == '.' || strcmp(e->d_name, bdf) == 0)
			continue;
		dev_link(e->d_name, "driver", drv, sizeof(drv));
		snprintf(list + used, sizeof(list) - used, "%s%s (%s)", used ? ", " : "",
			 e->d_name, drv[0] ? drv : "no driver");
	}
	if (dir)
		closedir(dir);
	TIDE_LOG_ERR_("pci", "%s: IOMMU group %d is not viable: every device in it must be bound "
		      "to vfio-pci or to no driver; it also holds: %s. Bind those with "
		      "scripts/tide-devbind --bind=vfio-pci BDF, or move the NIC to another slot",
		      bdf, group, list[0] ? list : "(none listed in sysfs)");
}

/*
 * The highest IOVA the IOMMU domain accepts (the end of its last valid range), or
 * UINT64_MAX when the kernel does not say. IOVA = VA needs it above every address mapped.
 */
static uint64_t iova_limit(int container)
{
	struct vfio_iommu_type1_info probe = {.argsz = sizeof(probe)};
	struct vfio_iommu_type1_info *info;
	uint64_t limit = UINT64_MAX;
	uint32_t off;

	if (ioctl(container, VFIO_IOMMU_GET_INFO, &probe) < 0 ||
	    !(probe.flags & VFIO_IOMMU_INFO_CAPS) || probe.argsz <= sizeof(probe))
		return limit;
	info = calloc(1, probe.argsz);
	if (info == NULL)
		return limit;
	info->argsz = probe.argsz;
	if (ioctl(container, VFIO_IOMMU_GET_INFO, info) == 0)
		for (off = info->cap_offset; off != 0 && off + sizeof(struct vfio_info_cap_header) <=
							     info->argsz;) {
			const struct vfio_info_cap_header *h =
				(const void *)((const char *)info + off);

			if (h->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
				const struct vfio_iommu_type1_info_cap_iova_range *r = (const void *)h;

				if (r->nr_iovas > 0 &&
				    off + sizeof(*r) + r->nr_iovas * sizeof(r->iova_ranges[0]) <=
					    info->argsz)
					limit = r->iova_ranges[r->nr_iovas - 1].end;
				break;
			}
			off = h->next;
		}
	free(info);
	return limit;
}

static int open_dev_node(const char *path, const char *bdf)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	fd = -errno;
	if (fd == -EACCES || fd == -EPERM)
		TIDE_LOG_ERR_("pci", "%s: no permission to open %s: run as root, or give this "
			      "user the device (chown USER %s; ulimit -l for the DMA memory)",
			      bdf, path, path);
	else if (fd == -ENOENT)
		TIDE_LOG_ERR_("pci", "%s: %s does not exist: load the VFIO modules (modprobe "
			      "vfio-pci) and bind the device again", bdf, path);
	else if (fd == -EBUSY)
		TIDE_LOG_ERR_("pci", "%s: %s is busy: another process has the device open", bdf,
			      path);
	else
		TIDE_LOG_ERR_("pci", "%s: cannot open %s: %s", bdf, path, strerror(-fd));
	return fd;
}

int pci_cfg_read(struct pci_dev *d, unsigned off, void *buf, size_t len)
{
	return pread(d->fd, buf, len, (off_t)(d->cfg_off + off)) == (ssize_t)len ? 0 : -EIO;
}

int pci_cfg_write(struct pci_dev *d, unsigned off, const void *buf, size_t len)
{
	return pwrite(d->fd, buf, len, (off_t)(d->cfg_off + off)) == (ssize_t)len ? 0 : -EIO;
}

static void set_command(struct pci_dev *d, uint16_t cmd)
{
	if (pci_cfg_write(d, PCI_COMMAND, &cmd, sizeof(cmd)) < 0)
		TIDE_LOG_WARN_("pci", "%s: cannot write the command register", d->bdf);
}

int pci_open(const char *bdf, struct pci_dev **out)
{
	struct vfio_group_status gs = {.argsz = sizeof(gs)};
	struct vfio_device_info di = {.argsz = sizeof(di)};
	struct vfio_region_info cr = {.argsz = sizeof(cr), .index = VFIO_PCI_CONFIG_REGION_INDEX};
	char path[PATH_MAX];
	struct pci_dev *d;
	int group, rc;
	uint16_t cmd;

	group = sysfs_check(bdf);
	if (group < 0)
		return group;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	snprintf(d->bdf, sizeof(d->bdf), "%s", bdf);
	d->group_id = group;
	d->container = d->group = d->fd = -1;
	d->link_vector = -1;
	d->iova_max = UINT64_MAX;
	for (unsigned i = 0; i < PCI_MAX_VECTORS; i++)
		d->irq_fd[i] = -1;
	if (pci_id_read(bdf, &d->vendor, &d->device) < 0) {
		rc = -EIO;
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/vfio", vfio_root);
	d->container = rc = open_dev_node(path, bdf);
	if (rc < 0)
		goto fail;
	if (ioctl(d->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
	    ioctl(d->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) <= 0) {
		TIDE_LOG_ERR_("pci", "%s: this kernel's VFIO has no type1v2 IOMMU (modprobe "
			      "vfio_iommu_type1)", bdf);
		rc = -ENOTSUP;
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/%d", vfio_root, group);
	d->group = rc = open_dev_node(path, bdf);
	if (rc < 0)
		goto fail;
	if (ioctl(d->group, VFIO_GROUP_GET_STATUS, &gs) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pci", "%s: VFIO_GROUP_GET_STATUS: %s", bdf, strerror(errno));
		goto fail;
	}
	if (!(gs.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		log_group_members(bdf, group);
		rc = -EBUSY;
		goto fail;
	}
	if (ioctl(d->group, VFIO_GROUP_SET_CONTAINER, &d->container) < 0 ||
	    ioctl(d->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pci", "%s: cannot attach IOMMU group %d to a type1 container: %s",
			      bdf, group, strerror(errno));
		goto fail;
	}
	d->iova_max = iova_limit(d->container);
	d->fd = ioctl(d->group, VFIO_GROUP_GET_DEVICE_FD, d->bdf);
	if (d->fd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pci", "%s: VFIO_GROUP_GET_DEVICE_FD: %s%s", bdf, strerror(errno),
			      errno == EBUSY ? " (another process has the device open)" : "");
		goto fail;
	}
	if (ioctl(d->fd, VFIO_DEVICE_GET_INFO, &di) < 0 ||
	    ioctl(d->fd, VFIO_DEVICE_GET_REGION_INFO, &cr) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pci", "%s: VFIO device info: %s", bdf, strerror(errno));
		goto fail;
	}
	d->cfg_off = cr.offset;
	if (pci_cfg_read(d, PCI_COMMAND, &d->command, sizeof(d->command)) < 0) {
		rc = -EIO;
		TIDE_LOG_ERR_("pci", "%s: cannot read the config space", bdf);
		goto fail;
	}
	/* A clean start: whatever a previous user left running stops here. */
	if ((di.flags & VFIO_DEVICE_FLAGS_RESET) && ioctl(d->fd, VFIO_DEVICE_RESET) < 0)
		TIDE_LOG_WARN_("pci", "%s: function reset failed: %s", bdf, strerror(errno));
	cmd = (uint16_t)(d->command | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	set_command(d, cmd);
	*out = d;
	return 0;
fail:
	pci_close(d);
	return rc;
}

void *pci_bar(struct pci_dev *d, unsigned i, size_t *len)
{
	struct vfio_region_info r = {.argsz = sizeof(r), .index = VFIO_PCI_BAR0_REGION_INDEX + i};
	void *p;

	if (i >= PCI_MAX_BARS)
		return NULL;
	if (d->bar[i] == NULL) {
		if (ioctl(d->fd, VFIO_DEVICE_GET_REGION_INFO, &r) < 0 || r.size == 0 ||
		    !(r.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
			TIDE_LOG_ERR_("pci", "%s: BAR%u cannot be mapped", d->bdf, i);
			return NULL;
		}
		p = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, (off_t)r.offset);
		if (p == MAP_FAILED) {
			TIDE_LOG_ERR_("pci", "%s: mmap of BAR%u: %s", d->bdf, i, strerror(errno));
			return NULL;
		}
		d->bar[i] = p;
		d->bar_len[i] = r.size;
	}
	if (len)
		*len = d->bar_len[i];
	return d->bar[i];
}

static int dma_ioctl_map(struct pci_dev *d, uintptr_t va, size_t len)
{
	struct vfio_iommu_type1_dma_map m = {
		.argsz = sizeof(m),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = va,
		.iova = va,
		.size = len,
	};

	return ioctl(d->container, VFIO_IOMMU_MAP_DMA, &m) < 0 ? -errno : 0;
}

static void dma_ioctl_unmap(struct pci_dev *d, uintptr_t va, size_t len)
{
	struct vfio_iommu_type1_dma_unmap u = {.argsz = sizeof(u), .iova = va, .size = len};

	if (ioctl(d->container, VFIO_IOMMU_UNMAP_DMA, &u) < 0)
		TIDE_LOG_WARN_("pci", "%s: unmapping IOVA %#lx (%zu bytes): %s", d->bdf,
			       (unsigned long)va, len, strerror(errno));
}

int pci_dma_map(struct pci_dev *d, void *va, size_t len, size_t page)
{
	uintptr_t base = (uintptr_t)va;
	long pg = sysconf(_SC_PAGESIZE);
	int rc;

	if (len == 0 || (base | len) & ((uintptr_t)pg - 1))
		return -EINVAL;
	for (unsigned i = 0; i < d->nb_dma; i++)
		if (d->dma[i].base == base) {
			if (d->dma[i].len != len)
				return -EINVAL;
			d->dma[i].refs++;
			return 0;
		}
	if (base + len - 1 > d->iova_max) {
		TIDE_LOG_ERR_("pci", "%s: memory at %p..%#lx is beyond what the IOMMU can address "
			      "(IOVA up to %#llx): IOVA = VA needs an IOMMU with 48-bit addresses "
			      "(QEMU: -device intel-iommu,aw-bits=48)", d->bdf, va,
			      (unsigned long)(base + len - 1), (unsigned long long)d->iova_max);
		return -ERANGE;
	}
	if (d->nb_dma == PCI_MAX_DMA) {
		TIDE_LOG_ERR_("pci", "%s: more than %d DMA regions", d->bdf, PCI_MAX_DMA);
		return -ENOSPC;
	}
	rc = dma_ioctl_map(d, base, len);
	if (rc < 0) {
		TIDE_LOG_ERR_("pci", "%s: VFIO_IOMMU_MAP_DMA of %zu bytes at %p: %s%s", d->bdf, len,
			      va, strerror(-rc),
			      rc == -ENOMEM ? " (the locked-memory limit: ulimit -l)" : "");
		return rc;
	}
	d->dma[d->nb_dma++] = (struct pci_dma){
		.base = base, .len = len, .page = page ? page : (size_t)pg, .refs = 1};
	return 0;
}

void pci_dma_unmap(struct pci_dev *d, void *va)
{
	for (unsigned i = 0; i < d->nb_dma; i++)
		if (d->dma[i].base == (uintptr_t)va) {
			if (--d->dma[i].refs != 0)
				return;
			dma_ioctl_unmap(d, d->dma[i].base, d->dma[i].len);
			d->dma[i] = d->dma[--d->nb_dma];
			return;
		}
}

const struct pci_dma *pci_dma_find(const struct pci_dev *d, const void *va, size_t len)
{
	uintptr_t a = (uintptr_t)va;

	for (unsigned i = 0; i < d->nb_dma; i++)
		if (a - d->dma[i].base < d->dma[i].len && len <= d->dma[i].len - (a - d->dma[i].base))
			return &d->dma[i];
	return NULL;
}

static int set_irqs(struct pci_dev *d, unsigned n, const int *fds)
{
	char buf[sizeof(struct vfio_irq_set) + PCI_MAX_VECTORS * sizeof(int)];
	struct vfio_irq_set *s = (struct vfio_irq_set *)(void *)buf;

	memset(buf, 0, sizeof(buf));
	s->argsz = (uint32_t)(sizeof(*s) + n * sizeof(int));
	s->index = VFIO_PCI_MSIX_IRQ_INDEX;
	s->start = 0;
	s->count = n;
	if (n) {
		s->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
		memcpy(s->data, fds, n * sizeof(int));
	} else {
		s->flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
	}
	return ioctl(d->fd, VFIO_DEVICE_SET_IRQS, s) < 0 ? -errno : 0;
}

int pci_irq_enable(struct pci_dev *d, unsigned n)
{
	struct vfio_irq_info ii = {.argsz = sizeof(ii), .index = VFIO_PCI_MSIX_IRQ_INDEX};
	int rc;

	if (n == 0 || n > PCI_MAX_VECTORS)
		return -EINVAL;
	if (ioctl(d->fd, VFIO_DEVICE_GET_IRQ_INFO, &ii) < 0 || ii.count < n ||
	    !(ii.flags & VFIO_IRQ_INFO_EVENTFD)) {
		TIDE_LOG_ERR_("pci", "%s: needs %u MSI-X vectors, the device offers %u", d->bdf, n,
			      ii.count);
		return -ENOTSUP;
	}
	for (unsigned i = 0; i < n; i++) {
		d->irq_fd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (d->irq_fd[i] < 0) {
			rc = -errno;
			d->nb_irq = i;
			pci_irq_disable(d);
			return rc;
		}
	}
	d->nb_irq = n;
	rc = set_irqs(d, n, d->irq_fd);
	if (rc < 0) {
		TIDE_LOG_ERR_("pci", "%s: VFIO_DEVICE_SET_IRQS (MSI-X, %u vectors): %s", d->bdf, n,
			      strerror(-rc));
		pci_irq_disable(d);
	}
	return rc;
}

void pci_irq_disable(struct pci_dev *d)
{
	if (d->nb_irq && d->fd >= 0)
		(void)set_irqs(d, 0, NULL);
	for (unsigned i = 0; i < PCI_MAX_VECTORS; i++) {
		if (d->irq_fd[i] >= 0)
			close(d->irq_fd[i]);
		d->irq_fd[i] = -1;
	}
	d->nb_irq = 0;
}

uint64_t pci_irq_drain(int fd)
{
	uint64_t v = 0;

	if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

void pci_close(struct pci_dev *d)
{
	if (d == NULL)
		return;
	pci_irq_disable(d);
	if (d->fd >= 0) {
		/* Stop DMA first: bus mastering off, then the function reset. */
		set_command(d, (uint16_t)(d->command & ~PCI_COMMAND_MASTER));
		(void)ioctl(d->fd, VFIO_DEVICE_RESET);
	}
	while (d->nb_dma) {
		d->dma[0].refs = 1;
		pci_dma_unmap(d, (void *)d->dma[0].base);
	}
	for (unsigned i = 0; i < PCI_MAX_BARS; i++)
		if (d->bar[i])
			munmap(d->bar[i], d->bar_len[i]);
	if (d->fd >= 0)
		close(d->fd);
	if (d->group >= 0) {
		if (d->container >= 0)
			(void)ioctl(d->group, VFIO_GROUP_UNSET_CONTAINER, &d->container);
		close(d->group);
	}
	if (d->container >= 0)
		close(d->container);
	free(d);
}
