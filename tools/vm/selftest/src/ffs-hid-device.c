// ffs-hid-device: a simulated HID device made with configfs + FunctionFS.
//
// Creates gadget "tuneup" (VID:PID 1209:0001) with one FunctionFS function whose
// interface is HID class with vendor feature reports 0xF0 (13 data bytes) and
// 0xF1 (256 data bytes), binds it to the first UDC (dummy_udc.0) and serves ep0:
//   GET_DESCRIPTOR(report)  -> report descriptor
//   SET_REPORT(feature, id) -> store the data (byte 0 is the report id)
//   GET_REPORT(feature, id) -> the stored data (echo)
//   SET_IDLE                -> ack
//   anything else           -> stall (also SET/GET_REPORT of other report ids)
// Test-control commands: SET_REPORT 0xF0 with data "F0 'T' 'U' 'N' 'E' CMD ...":
//   0xB0 -> "jump to bootloader": unbind, switch idProduct to 0x0002, rebind
//   0xA0 -> "jump to application": unbind, idProduct 0x0001, rebind
//   0xDD -> done: clean up and exit
// Prints every ep0 event with a timestamp so the kernel's own requests are visible.
// usage: ffs-hid-device [--dump]   (--dump: print the ep0 blobs in hex and exit)
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#define GADGET "/sys/kernel/config/usb_gadget/tuneup"
#define FFS_NAME "hid"                 // function "ffs.hid" <-> mount source "hid"
#define FFS_DIR "/dev/ffs-hid"

static double t0;
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
static void logf_(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("[dev %8.3f] ", now() - t0);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}
static void die(const char *what) {
  logf_("FATAL %s: %s", what, strerror(errno));
  printf("FAIL usb-device: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void put(const char *path, const char *value) {
  int fd = open(path, O_WRONLY);
  if (fd < 0) die(path);
  ssize_t n = write(fd, value, strlen(value));
  if (n < 0) die(path);
  close(fd);
}
static void mkd(const char *path) {
  if (mkdir(path, 0755) < 0 && errno != EEXIST) die(path);
}

// ---- descriptors -----------------------------------------------------------
// HID report descriptor: vendor page, two feature reports.
static const uint8_t report_desc[] = {
    0x06, 0x00, 0xFF,  // Usage Page (Vendor Defined 0xFF00)
    0x09, 0x01,        // Usage (0x01)
    0xA1, 0x01,        // Collection (Application)
    0x15, 0x00,        //   Logical Minimum (0)
    0x26, 0xFF, 0x00,  //   Logical Maximum (255)
    0x75, 0x08,        //   Report Size (8)
    0x85, 0xF0,        //   Report ID (0xF0)
    0x09, 0x02,        //   Usage (0x02)
    0x95, 0x0D,        //   Report Count (13)
    0xB1, 0x02,        //   Feature (Data,Var,Abs)
    0x85, 0xF1,        //   Report ID (0xF1)
    0x09, 0x03,        //   Usage (0x03)
    0x96, 0x00, 0x01,  //   Report Count (256)
    0xB1, 0x02,        //   Feature (Data,Var,Abs)
    0xC0,              // End Collection
};

// FunctionFS v2 descriptor blob: header, full-speed set, high-speed set.
// dummy_hcd runs at high speed, so the HS set is the one used; FS is there
// because a function must be usable at full speed as well.
#define N_DESC 3  // interface, HID, endpoint
static uint8_t descs[128];
static size_t descs_len;

static void build_descriptors(void) {
  uint8_t *p = descs;
  size_t rdlen = sizeof report_desc;
#define LE32(v) do { uint32_t _v = htole32(v); memcpy(p, &_v, 4); p += 4; } while (0)
  LE32(FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
  uint8_t *lenp = p;
  LE32(0);  // length, patched below
  LE32(FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC);
  LE32(N_DESC);  // fs_count
  LE32(N_DESC);  // hs_count
  for (int speed = 0; speed < 2; speed++) {
    const uint8_t intf[] = {9, USB_DT_INTERFACE, 0 /*bInterfaceNumber*/, 0 /*alt*/,
                            1 /*bNumEndpoints*/, 0x03 /*HID*/, 0 /*no subclass*/,
                            0 /*no protocol*/, 1 /*iInterface: string #1*/};
    const uint8_t hid[] = {9, 0x21 /*HID*/, 0x11, 0x01 /*bcdHID 1.11*/, 0 /*country*/,
                           1 /*bNumDescriptors*/, 0x22 /*report*/,
                           (uint8_t)(rdlen & 0xFF), (uint8_t)(rdlen >> 8)};
    // Interrupt IN, 64 bytes; bInterval: FS in ms (10), HS 2^(n-1) microframes (4 = 1 ms).
    const uint8_t ep[] = {7, USB_DT_ENDPOINT, 0x81, USB_ENDPOINT_XFER_INT, 64, 0,
                          speed == 0 ? 10 : 4};
    memcpy(p, intf, sizeof intf); p += sizeof intf;
    memcpy(p, hid, sizeof hid); p += sizeof hid;
    memcpy(p, ep, sizeof ep); p += sizeof ep;
  }
  descs_len = p - descs;
  uint32_t l = htole32(descs_len);
  memcpy(lenp, &l, 4);
#undef LE32
}

// Strings blob: one language (0x0409), one string (the interface name).
static uint8_t strs[64];
static size_t strs_len;
static void build_strings(void) {
  const char *s1 = "Tuneup HID";
  uint8_t *p = strs;
  uint32_t v;
  v = htole32(FUNCTIONFS_STRINGS_MAGIC); memcpy(p, &v, 4); p += 4;
  uint8_t *lenp = p; p += 4;
  v = htole32(1); memcpy(p, &v, 4); p += 4;  // str_count
  v = htole32(1); memcpy(p, &v, 4); p += 4;  // lang_count
  uint16_t lang = htole16(0x0409); memcpy(p, &lang, 2); p += 2;
  memcpy(p, s1, strlen(s1) + 1); p += strlen(s1) + 1;
  strs_len = p - strs;
  v = htole32(strs_len); memcpy(lenp, &v, 4);
}

static void hexdump(const char *name, const uint8_t *b, size_t n) {
  printf("%s (%zu bytes):", name, n);
  for (size_t i = 0; i < n; i++) printf("%s%02X", i % 16 ? " " : "\n  ", b[i]);
  printf("\n");
}

// ---- gadget ------------------------------------------------------------------
static char udc_name[256];

static void find_udc(void) {
  // /sys/class/udc has one entry per UDC; with dummy_hcd it is "dummy_udc.0".
  DIR *d = opendir("/sys/class/udc");
  if (!d) die("/sys/class/udc");
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(udc_name, sizeof udc_name, "%s", e->d_name);
    break;
  }
  closedir(d);
  if (!udc_name[0]) { errno = ENODEV; die("no UDC in /sys/class/udc"); }
}

static void gadget_create(void) {
  mkd(GADGET);
  put(GADGET "/idVendor", "0x1209");
  put(GADGET "/idProduct", "0x0001");
  put(GADGET "/bcdDevice", "0x0100");
  put(GADGET "/bcdUSB", "0x0200");
  mkd(GADGET "/strings/0x409");
  put(GADGET "/strings/0x409/manufacturer", "Tuneup");
  put(GADGET "/strings/0x409/product", "Simulated Headset");
  put(GADGET "/strings/0x409/serialnumber", "SIM0001");
  mkd(GADGET "/configs/c.1");
  mkd(GADGET "/configs/c.1/strings/0x409");
  put(GADGET "/configs/c.1/strings/0x409/configuration", "HID");
  put(GADGET "/configs/c.1/MaxPower", "100");
  mkd(GADGET "/functions/ffs." FFS_NAME);
  if (symlink(GADGET "/functions/ffs." FFS_NAME, GADGET "/configs/c.1/ffs." FFS_NAME) < 0 &&
      errno != EEXIST)
    die("symlink function into config");
  mkd(FFS_DIR);
  if (mount(FFS_NAME, FFS_DIR, "functionfs", 0, NULL) < 0) die("mount functionfs");
}

static void gadget_bind(void) { put(GADGET "/UDC", udc_name); }
static void gadget_unbind(void) { put(GADGET "/UDC", "\n"); }

static void gadget_destroy(int ep0) {
  // Order matters: unbind, close ep0 (the function is then "not ready"), unmount,
  // then remove configfs entries bottom-up.
  gadget_unbind();
  close(ep0);
  if (umount(FFS_DIR) < 0) logf_("umount: %s", strerror(errno));
  rmdir(FFS_DIR);
  unlink(GADGET "/configs/c.1/ffs." FFS_NAME);
  rmdir(GADGET "/configs/c.1/strings/0x409");
  rmdir(GADGET "/configs/c.1");
  rmdir(GADGET "/functions/ffs." FFS_NAME);
  rmdir(GADGET "/strings/0x409");
  if (rmdir(GADGET) < 0) logf_("rmdir gadget: %s", strerror(errno));
}

// ---- ep0 -------------------------------------------------------------------------
static uint8_t rep_f0[14] = {0xF0};
static uint8_t rep_f1[257] = {0xF1};
static const char *evname[] = {"BIND", "UNBIND", "ENABLE", "DISABLE", "SETUP", "SUSPEND", "RESUME"};

static void stall(int ep0, const struct usb_ctrlrequest *r) {
  // Stall = do the opposite of the data direction: read() for IN, write() for OUT.
  // The kernel then answers -EL2HLT (errno 51) to that call, which is expected.
  uint8_t dummy;
  ssize_t n = (r->bRequestType & USB_DIR_IN) ? read(ep0, &dummy, 0) : write(ep0, &dummy, 0);
  logf_("  -> stalled (%zd, %s)", n, n < 0 ? strerror(errno) : "ok");
}

enum { CMD_NONE, CMD_BOOTLOADER, CMD_APP, CMD_DONE };

static int handle_setup(int ep0, const struct usb_ctrlrequest *r) {
  uint16_t wValue = le16toh(r->wValue), wIndex = le16toh(r->wIndex), wLength = le16toh(r->wLength);
  logf_("SETUP bmRequestType=%02X bRequest=%02X wValue=%04X wIndex=%04X wLength=%u",
        r->bRequestType, r->bRequest, wValue, wIndex, wLength);
  // GET_DESCRIPTOR(HID report) on the interface
  if (r->bRequestType == 0x81 && r->bRequest == USB_REQ_GET_DESCRIPTOR && (wValue >> 8) == 0x22) {
    size_t n = wLength < sizeof report_desc ? wLength : sizeof report_desc;
    ssize_t w = write(ep0, report_desc, n);  // IN data stage: write()
    logf_("  -> report descriptor, wrote %zd", w);
    return CMD_NONE;
  }
  if (r->bRequestType == 0x21 && r->bRequest == 0x0A) {  // SET_IDLE, no data stage
    ssize_t n = read(ep0, NULL, 0);                      // ack = zero-length read
    logf_("  -> SET_IDLE acked (%zd)", n);
    return CMD_NONE;
  }
  if (r->bRequestType == 0x21 && r->bRequest == 0x09 && (wValue >> 8) == 0x03 &&
      ((wValue & 0xFF) == 0xF0 || (wValue & 0xFF) == 0xF1)) {  // SET_REPORT feature F0/F1
    uint8_t buf[512];
    ssize_t n = read(ep0, buf, wLength);  // OUT data stage: read() wLength bytes
    uint8_t id = wValue & 0xFF;
    logf_("  -> SET_REPORT id %02X: read %zd bytes", id, n);
    if (n < 1) return CMD_NONE;
    if (id == 0xF0 && n == sizeof rep_f0) {
      memcpy(rep_f0, buf, n);
      if (!memcmp(buf + 1, "TUNE", 4)) {  // test-control command, see the top comment
        if (buf[5] == 0xB0) return CMD_BOOTLOADER;
        if (buf[5] == 0xA0) return CMD_APP;
        if (buf[5] == 0xDD) return CMD_DONE;
      }
    } else if (id == 0xF1 && n == sizeof rep_f1) {
      memcpy(rep_f1, buf, n);
    } else {
      logf_("  unexpected report length");
    }
    return CMD_NONE;
  }
  if (r->bRequestType == 0xA1 && r->bRequest == 0x01 && (wValue >> 8) == 0x03) {  // GET_REPORT feature
    uint8_t id = wValue & 0xFF;
    const uint8_t *src = id == 0xF0 ? rep_f0 : id == 0xF1 ? rep_f1 : NULL;
    size_t len = id == 0xF0 ? sizeof rep_f0 : sizeof rep_f1;
    if (!src) { stall(ep0, r); return CMD_NONE; }
    if (wLength < len) len = wLength;
    ssize_t w = write(ep0, src, len);  // IN data stage: write()
    logf_("  -> GET_REPORT id %02X: wrote %zd", id, w);
    return CMD_NONE;
  }
  stall(ep0, r);
  return CMD_NONE;
}

static volatile sig_atomic_t stop;
static int eidrm;  // count of EIDRM seen on ep0
static void on_signal(int s) { (void)s; stop = 1; }

int main(int argc, char **argv) {
  t0 = now();
  setvbuf(stdout, NULL, _IOLBF, 0);
  build_descriptors();
  build_strings();
  if (argc > 1 && !strcmp(argv[1], "--dump")) {
    hexdump("descriptors", descs, descs_len);
    hexdump("strings", strs, strs_len);
    hexdump("report descriptor", report_desc, sizeof report_desc);
    return 0;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);

  find_udc();
  logf_("UDC: %s", udc_name);
  gadget_create();
  int ep0 = open(FFS_DIR "/ep0", O_RDWR);
  if (ep0 < 0) die("open ep0");
  if (write(ep0, descs, descs_len) != (ssize_t)descs_len) die("write descriptors to ep0");
  if (write(ep0, strs, strs_len) != (ssize_t)strs_len) die("write strings to ep0");
  // After both blobs the endpoint files exist: ep1 is the interrupt IN endpoint.
  logf_("ep0 ready, %s exists: %s", FFS_DIR "/ep1", access(FFS_DIR "/ep1", F_OK) == 0 ? "yes" : "no");
  gadget_bind();
  logf_("bound to %s", udc_name);

  int rc = 0;
  while (!stop) {
    struct pollfd pfd = {.fd = ep0, .events = POLLIN};
    int pr = poll(&pfd, 1, 500);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    struct usb_functionfs_event ev[4];
    ssize_t n = read(ep0, ev, sizeof ev);  // whole events only; a SETUP is always the last one
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EIDRM) {
        // The kernel marked the previous SETUP "cancelled" because a new event
        // (often the next SETUP) was queued before it had finished the last
        // one; it has now reset the state: just read again, the new event is
        // still queued. Seen ~1 in 1000 requests under QEMU TCG with 2 vCPUs.
        eidrm++;
        logf_("read ep0 events: EIDRM (stale cancelled setup), retrying");
        continue;
      }
      die("read ep0 events");
    }
    int cmd = CMD_NONE;
    for (int i = 0; i < n / (ssize_t)sizeof ev[0]; i++) {
      if (ev[i].type != FUNCTIONFS_SETUP) {
        logf_("event %s", ev[i].type < 7 ? evname[ev[i].type] : "?");
        continue;
      }
      cmd = handle_setup(ep0, &ev[i].u.setup);
    }
    if (cmd == CMD_BOOTLOADER || cmd == CMD_APP) {
      // A device re-enumerating: drop off the bus, come back with another PID.
      usleep(20000);  // let the status stage reach the host first
      double ts = now();
      gadget_unbind();
      put(GADGET "/idProduct", cmd == CMD_BOOTLOADER ? "0x0002" : "0x0001");
      gadget_bind();
      logf_("re-enumerated as 1209:%s (unbind+rebind %.1f ms)",
            cmd == CMD_BOOTLOADER ? "0002" : "0001", (now() - ts) * 1e3);
    } else if (cmd == CMD_DONE) {
      break;
    }
  }
  gadget_destroy(ep0);
  printf("INFO ffs ep0 EIDRM (cancelled setup) seen %d times\n", eidrm);
  logf_("gadget removed, exit %d", rc);
  return rc;
}
