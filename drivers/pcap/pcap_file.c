/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap driver: the capture files. The rx= capture is opened with libpcap and read through
 * once at open (a file that is not a capture, or is cut short, is refused). The tx= file is
 * checked against every open pcap port (by device and inode, so links and other spellings
 * count) before it is truncated, and gets the file header.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "pcap_drv.h"

/* Every open pcap port, for the same-file checks at open. */
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pcap_port *ports_open;

int pcap_rx_file_open(const char *who, const char *path, pcap_t **out)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	FILE *fp = fopen(path, "rb");
	int rc;

	if (fp == NULL) {
		rc = -errno;
		TIDE_LOG_ERR_(who, "rx=%s: %s", path, strerror(errno));
		return rc;
	}
	*out = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, err);
	if (*out == NULL) {
		fclose(fp);
		TIDE_LOG_ERR_(who, "rx=%s: not a readable capture: %s", path, err);
		return -EINVAL;
	}
	return 0;
}

/* Read the whole capture once so that a bad file is refused at open, not mid-run. */
int pcap_rx_file_check(struct pcap_port *pp)
{
	struct pcap_pkthdr *h;
	const u_char *d;
	struct stat st;
	pcap_t *pc;
	int rc = pcap_rx_file_open("pcap", pp->rx_path, &pc);

	if (rc < 0)
		return rc;
	if (fstat(fileno(pcap_file(pc)), &st) == 0) {
		pp->rx_dev = st.st_dev;
		pp->rx_ino = st.st_ino;
	}
	pp->rx_linktype = pcap_datalink(pc);
	while ((rc = pcap_next_ex(pc, &h, &d)) == 1)
		pp->capture_pkts++;
	if (rc != PCAP_ERROR_BREAK) {
		TIDE_LOG_ERR_("pcap", "rx=%s: bad capture after %llu packets: %s", pp->rx_path,
			      (unsigned long long)pp->capture_pkts, pcap_geterr(pc));
		pcap_close(pc);
		return -EINVAL;
	}
	pcap_close(pc);
	return 0;
}

/*
 * Which open port (this one included) reads or writes this file: a tx= must be neither.
 * Called with ports_lock held. Returns "reads" or "writes" for the message, or NULL.
 */
static const char *file_user(const struct pcap_port *self, dev_t dev, ino_t ino,
			     const struct pcap_port **who)
{
	for (const struct pcap_port *o = ports_open; o != NULL; o = o->next) {
		if (o->tx_fd >= 0 && o->tx_dev == dev && o->tx_ino == ino) {
			*who = o;
			return "writes";
		}
		if (o->rx_path && o->rx_dev == dev && o->rx_ino == ino) {
			*who = o;
			return "reads";
		}
	}
	if (self->rx_path && self->rx_dev == dev && self->rx_ino == ino) {
		*who = self;
		return "reads";
	}
	return NULL;
}

/* Open (without truncating), check that nobody reads or writes it, then truncate and write
 * the file header. Called with ports_lock held. */
static int tx_file_open(struct pcap_port *pp)
{
	uint8_t hdr[PCAP_FILE_HDR];
	const struct pcap_port *o;
	const char *what;
	struct stat st;
	ssize_t w;
	int fd = open(pp->tx_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), rc;

	if (fd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pcap", "tx=%s: cannot create: %s", pp->tx_path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pcap", "tx=%s: %s", pp->tx_path, strerror(errno));
		close(fd);
		return rc;
	}
	what = file_user(pp, st.st_dev, st.st_ino, &o);
	if (what != NULL) {
		if (o == pp)
			TIDE_LOG_ERR_("pcap", "tx=%s: is the capture rx=%s reads; writing it would "
				      "destroy the input", pp->tx_path, pp->rx_path);
		else
			TIDE_LOG_ERR_("pcap", "tx=%s: %s %s this file (%s=%s)", pp->tx_path,
				      o->port->name, what, what[0] == 'r' ? "rx" : "tx",
				      what[0] == 'r' ? o->rx_path : o->tx_path);
		close(fd);
		return -EINVAL;
	}
	pp->tx_regular = S_ISREG(st.st_mode);
	if (pp->tx_regular && ftruncate(fd, 0) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pcap", "tx=%s: cannot truncate: %s", pp->tx_path, strerror(errno));
		close(fd);
		return rc;
	}
	pp->tx_linktype = pp->rx_path ? (uint32_t)pp->rx_linktype : DLT_EN10MB;
	pcap_wr32(hdr, PCAP_MAGIC_NS);
	pcap_wr32(hdr + 4, 2 | 4u << 16); /* version 2.4 (two 16-bit fields, host order) */
	pcap_wr32(hdr + 8, 0);            /* thiszone */
	pcap_wr32(hdr + 12, 0);           /* sigfigs */
	pcap_wr32(hdr + 16, PCAP_SNAPLEN);
	pcap_wr32(hdr + PCAP_OFF_LINK, pp->tx_linktype);
	w = write(fd, hdr, sizeof(hdr));
	if (w != (ssize_t)sizeof(hdr)) {
		rc = w < 0 ? -errno : -ENOSPC;
		TIDE_LOG_ERR_("pcap", "tx=%s: cannot write the file header: %s", pp->tx_path,
			      strerror(-rc));
		close(fd);
		return rc;
	}
	pp->tx_fd = fd;
	pp->tx_dev = st.st_dev;
	pp->tx_ino = st.st_ino;
	pp->tx_off = PCAP_FILE_HDR;
	return 0;
}

int pcap_port_register(struct pcap_port *pp)
{
	int rc = 0;

	pthread_mutex_lock(&ports_lock);
	if (pp->tx_path)
		rc = tx_file_open(pp);
	if (rc == 0) {
		pp->next = ports_open;
		ports_open = pp;
	}
	pthread_mutex_unlock(&ports_lock);
	return rc;
}

void pcap_port_unregister(struct pcap_port *pp)
{
	pthread_mutex_lock(&ports_lock);
	for (struct pcap_port **l = &ports_open; *l != NULL; l = &(*l)->next)
		if (*l == pp) {
			*l = pp->next;
			break;
		}
	pthread_mutex_unlock(&ports_lock);
}
