/*
 * usbmon-pcap: record a Linux usbmon bus to a pcap file, LINKTYPE_USB_LINUX_MMAPPED (220), the format tshark and
 * Wireshark read from their own usbmon captures.
 *
 * usage: usbmon-pcap [-r RING_BYTES] /dev/usbmonN OUT.pcap
 *
 * Reads the kernel's binary interface (Documentation/usb/usbmon.rst, "binary interface"): one event per
 * MON_IOCX_GETX ioctl, a 64-byte header then the captured data. Each event becomes one pcap record: the header as
 * the kernel gave it (host byte order, which the pcap magic number records) followed by the data. The record's
 * timestamp is the header's own.
 *
 * Prints "usbmon-pcap: capturing DEVICE" on stdout once the device is open (events are recorded from then on).
 * SIGTERM or SIGINT: the events still in the kernel's ring are read (it polls, so a signal is seen at once), the file is flushed and synced, and the program
 * exits 0, after printing on stderr how many events it wrote and how many the kernel dropped (ring full).
 * Exit status: 0 done, 64 usage, 66 the device cannot be opened, 73 the output cannot be created, 74 an I/O error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The binary interface's 64-byte event header (the layout the kernel documents for MON_IOCX_GETX). */
struct mon_header {
    uint64_t id;          /* URB tag: the same on the submission and on its completion */
    uint8_t type;         /* 'S' submission, 'C' completion, 'E' error */
    uint8_t xfer_type;    /* 0 isochronous, 1 interrupt, 2 control, 3 bulk */
    uint8_t epnum;        /* endpoint, bit 7 = IN */
    uint8_t devnum;
    uint16_t busnum;
    int8_t flag_setup;    /* 0: the setup packet is in `setup` */
    int8_t flag_data;     /* 0: data follows */
    int64_t ts_sec;
    int32_t ts_usec;
    int32_t status;
    uint32_t length;      /* bytes of the transfer */
    uint32_t len_cap;     /* bytes delivered with this event */
    uint8_t setup[8];     /* or the isochronous error count and descriptor count */
    int32_t interval;
    int32_t start_frame;
    uint32_t xfer_flags;
    uint32_t ndesc;
};
_Static_assert(sizeof(struct mon_header) == 64, "usbmon's binary header is 64 bytes");

struct mon_get {          /* argument of MON_IOCX_GETX */
    struct mon_header *hdr;
    void *data;
    size_t alloc;
};

struct mon_stats {        /* argument of MON_IOCG_STATS */
    uint32_t queued;
    uint32_t dropped;
};

#define MON_MAGIC 0x92
#define MON_IOCG_STATS _IOR(MON_MAGIC, 3, struct mon_stats)
#define MON_IOCT_RING_SIZE _IO(MON_MAGIC, 4)
#define MON_IOCX_GETX _IOW(MON_MAGIC, 10, struct mon_get)

#define LINKTYPE_USB_LINUX_MMAPPED 220
#define DATA_MAX (256 * 1024)

static volatile sig_atomic_t stopping;

static void on_signal(int sig) { (void)sig; stopping = 1; }

static void put32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void put16(FILE *f, uint16_t v) { fwrite(&v, 2, 1, f); }

int main(int argc, char **argv)
{
    long ring = 1200 * 1024; /* the kernel's largest ring: a flash's polls never fill it */
    int opt;
    while ((opt = getopt(argc, argv, "r:")) != -1) {
        if (opt == 'r') ring = strtol(optarg, NULL, 0);
        else { fprintf(stderr, "usage: usbmon-pcap [-r RING_BYTES] /dev/usbmonN OUT.pcap\n"); return 64; }
    }
    if (argc - optind != 2) { fprintf(stderr, "usage: usbmon-pcap [-r RING_BYTES] /dev/usbmonN OUT.pcap\n"); return 64; }
    const char *device = argv[optind], *path = argv[optind + 1];

    int fd = open(device, O_RDONLY);
    if (fd < 0) { fprintf(stderr, "usbmon-pcap: %s: %s (is the usbmon module loaded?)\n", device, strerror(errno)); return 66; }
    if (ring > 0 && ioctl(fd, MON_IOCT_RING_SIZE, ring) < 0)
        fprintf(stderr, "usbmon-pcap: ring size %ld refused (%s), keeping the default\n", ring, strerror(errno));

    FILE *out = fopen(path, "wb");
    if (out == NULL) { fprintf(stderr, "usbmon-pcap: %s: %s\n", path, strerror(errno)); return 73; }
    /* pcap file header, native byte order, microsecond timestamps. */
    put32(out, 0xa1b2c3d4);
    put16(out, 2);
    put16(out, 4);
    put32(out, 0);
    put32(out, 0);
    put32(out, sizeof(struct mon_header) + DATA_MAX);
    put32(out, LINKTYPE_USB_LINUX_MMAPPED);

    /* No SA_RESTART: the signal interrupts the blocking ioctl (EINTR), then the ring is drained. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    printf("usbmon-pcap: capturing %s\n", device);
    fflush(stdout);

    static unsigned char data[DATA_MAX];
    struct mon_header hdr;
    struct mon_get get = { &hdr, data, sizeof data };
    unsigned long events = 0;
    /* Non-blocking reads after poll(): a signal arriving at any moment is seen within 100 ms. Once stopping, the
     * events still in the ring are read until it is empty. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    for (;;) {
        int stop = stopping;
        if (!stop) {
            struct pollfd p = { fd, POLLIN, 0 };
            if (poll(&p, 1, 100) <= 0) continue;
        }
        if (ioctl(fd, MON_IOCX_GETX, &get) < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) { if (stop) break; continue; }
            fprintf(stderr, "usbmon-pcap: %s: %s\n", device, strerror(errno));
            fclose(out);
            return 74;
        }
        uint32_t cap = hdr.len_cap < sizeof data ? hdr.len_cap : (uint32_t)sizeof data;
        put32(out, (uint32_t)hdr.ts_sec);
        put32(out, (uint32_t)hdr.ts_usec);
        put32(out, sizeof hdr + cap);
        /* Original length: the transfer's, when this event carries its data (an IN submission carries none). */
        put32(out, sizeof hdr + (hdr.flag_data == 0 && hdr.length > cap ? hdr.length : cap));
        fwrite(&hdr, sizeof hdr, 1, out);
        fwrite(data, 1, cap, out);
        if (ferror(out)) { fprintf(stderr, "usbmon-pcap: %s: write failed\n", path); return 74; }
        events++;
    }

    struct mon_stats st = { 0, 0 };
    ioctl(fd, MON_IOCG_STATS, &st);
    close(fd);
    if (fflush(out) != 0 || fsync(fileno(out)) != 0 || fclose(out) != 0) {
        fprintf(stderr, "usbmon-pcap: %s: %s\n", path, strerror(errno));
        return 74;
    }
    fprintf(stderr, "usbmon-pcap: %lu events written, %u dropped by the kernel\n", events, st.dropped);
    return 0;
}
