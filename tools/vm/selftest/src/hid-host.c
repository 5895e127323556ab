// hid-host: the host-tool side of the FunctionFS HID proof, with libusb.
//
// 1. finds 1209:0001, checks that the kernel bound usbhid to interface 0
//    (libusb_kernel_driver_active + the sysfs driver link + a hidraw node),
// 2. detaches it, claims interface 0,
// 3. SET_REPORT 0xF1 (257 bytes), SET_REPORT 0xF0 (14), GET_REPORT 0xF0 (14),
//    GET_REPORT 0xF1 (257) and compares,
// 4. times SET+GET pairs,
// 5. releases, re-attaches usbhid and checks it is bound again,
// 6. sends "jump to bootloader", waits for 1209:0002, talks to it, sends "jump
//    to application", waits for 1209:0001 again, then "done".
// Prints PASS/FAIL lines and INFO lines for timings.
// usage: hid-host [--stale-list-test]   (also check, 3 s, whether the first libusb
//        context ever sees the re-enumerated device; it does not without udevd)
// HID_PAIRS=N sets the number of timed SET+GET pairs (default 100).
#include <dirent.h>
#include <errno.h>
#include <libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VID 0x1209
#define PID_APP 0x0001
#define PID_BOOT 0x0002
#define TIMEOUT_MS 2000

static int failures;
#define FAIL(name, ...) do { printf("FAIL %s: ", name); printf(__VA_ARGS__); printf("\n"); failures++; } while (0)
#define PASS(name) printf("PASS %s\n", name)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int set_report(libusb_device_handle *h, uint8_t id, uint8_t *buf, int len) {
  // bmRequestType 0x21 (class, interface, OUT), SET_REPORT, wValue = (3=feature)<<8 | id
  return libusb_control_transfer(h, 0x21, 0x09, 0x0300 | id, 0, buf, len, TIMEOUT_MS);
}
static int get_report(libusb_device_handle *h, uint8_t id, uint8_t *buf, int len) {
  // bmRequestType 0xA1 (class, interface, IN), GET_REPORT
  return libusb_control_transfer(h, 0xA1, 0x01, 0x0300 | id, 0, buf, len, TIMEOUT_MS);
}

// Look for VID:PID. With udev-enabled libusb and no udevd (as in the VM) the
// context's device list never changes after libusb_init (hotplug events come
// from udevd), so by default a fresh context is made for every scan.
static libusb_device_handle *find(libusb_context **ctx, uint16_t pid, double wait_s, int fresh_ctx,
                                  double *found_after) {
  double start = now();
  do {
    if (fresh_ctx) {
      if (*ctx) libusb_exit(*ctx);
      *ctx = NULL;
      if (libusb_init(ctx) < 0) return NULL;
    }
    libusb_device **list;
    ssize_t n = libusb_get_device_list(*ctx, &list);
    libusb_device_handle *h = NULL;
    for (ssize_t i = 0; i < n && !h; i++) {
      struct libusb_device_descriptor d;
      if (libusb_get_device_descriptor(list[i], &d) == 0 && d.idVendor == VID && d.idProduct == pid) {
        int r = libusb_open(list[i], &h);
        if (r < 0) { h = NULL; }  // can race with enumeration: retry
      }
    }
    if (n >= 0) libusb_free_device_list(list, 1);
    if (h) {
      if (found_after) *found_after = now() - start;
      return h;
    }
    usleep(20000);
  } while (now() - start < wait_s);
  return NULL;
}

// Name of the kernel driver bound to interface 0, from sysfs ("" if none).
static void sysfs_driver(libusb_device_handle *h, char *out, size_t outlen) {
  libusb_device *dev = libusb_get_device(h);
  uint8_t ports[8];
  int np = libusb_get_port_numbers(dev, ports, 8);
  char path[256];
  int off = snprintf(path, sizeof path, "/sys/bus/usb/devices/%d-", libusb_get_bus_number(dev));
  for (int i = 0; i < np; i++) off += snprintf(path + off, sizeof path - off, i ? ".%d" : "%d", ports[i]);
  snprintf(path + off, sizeof path - off, ":1.0/driver");
  char target[256] = "";
  ssize_t n = readlink(path, target, sizeof target - 1);
  out[0] = 0;
  if (n > 0) {
    target[n] = 0;
    snprintf(out, outlen, "%s", strrchr(target, '/') + 1);
  }
}
static int count_hidraw(void) {
  DIR *d = opendir("/sys/class/hidraw");
  int n = 0;
  struct dirent *e;
  if (!d) return 0;
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int roundtrip(libusb_device_handle *h, uint8_t id, int len, int seed) {
  uint8_t out[257], in[257];
  out[0] = id;
  for (int i = 1; i < len; i++) out[i] = (uint8_t)(i * 7 + seed);
  int r = set_report(h, id, out, len);
  if (r != len) { printf("  SET_REPORT %02X: %s\n", id, r < 0 ? libusb_error_name(r) : "short"); return -1; }
  memset(in, 0, sizeof in);
  r = get_report(h, id, in, len);
  if (r != len) { printf("  GET_REPORT %02X: %s (%d)\n", id, r < 0 ? libusb_error_name(r) : "short", r); return -1; }
  if (memcmp(in, out, len)) { printf("  GET_REPORT %02X: data differs\n", id); return -1; }
  return 0;
}

static void timing(libusb_device_handle *h, uint8_t id, int len, int n) {
  double *t = calloc(n, sizeof *t), sum = 0;
  for (int i = 0; i < n; i++) {
    double s = now();
    if (roundtrip(h, id, len, i)) { FAIL("usb-hid-timing", "round trip %d failed", i); free(t); return; }
    t[i] = (now() - s) * 1e3;
    sum += t[i];
  }
  qsort(t, n, sizeof *t, cmp_double);
  printf("INFO usb SET+GET report %02X (%d bytes each way), %d pairs: min %.2f ms, median %.2f ms, "
         "mean %.2f ms, max %.2f ms\n", id, len, n, t[0], t[n / 2], sum / n, t[n - 1]);
  free(t);
}

static int command(libusb_device_handle *h, uint8_t cmd) {
  uint8_t b[14] = {0xF0, 'T', 'U', 'N', 'E', cmd};
  int r = set_report(h, 0xF0, b, sizeof b);
  // The device drops off the bus right after the status stage; a transfer
  // error here would also be acceptable, so only report it.
  if (r != (int)sizeof b) printf("  command %02X: %s\n", cmd, r < 0 ? libusb_error_name(r) : "short");
  return r;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int stale_test = argc > 1 && !strcmp(argv[1], "--stale-list-test");
  libusb_context *ctx = NULL;
  const struct libusb_version *v = libusb_get_version();
  printf("INFO libusb %d.%d.%d, hotplug capability %d\n", v->major, v->minor, v->micro,
         libusb_has_capability(LIBUSB_CAP_HAS_HOTPLUG));

  double found;
  libusb_device_handle *h = find(&ctx, PID_APP, 10, 1, &found);
  if (!h) { FAIL("usb-enumerate", "1209:0001 not found"); return 1; }
  PASS("usb-enumerate");

  // --- usbhid bound? ---
  char drv[64];
  int hidraw_before = count_hidraw();
  sysfs_driver(h, drv, sizeof drv);
  int active = libusb_kernel_driver_active(h, 0);
  printf("INFO kernel driver on interface 0: active=%d sysfs=%s hidraw nodes=%d\n", active, drv, hidraw_before);
  if (active == 1 && !strcmp(drv, "usbhid") && hidraw_before > 0) PASS("usb-hid-kernel-bound");
  else FAIL("usb-hid-kernel-bound", "active=%d driver='%s' hidraw=%d", active, drv, hidraw_before);

  // While usbhid owns the interface, usbfs refuses class requests to it.
  uint8_t probe[14];
  int r = get_report(h, 0xF0, probe, sizeof probe);
  printf("INFO GET_REPORT while usbhid is bound: %s\n", r < 0 ? libusb_error_name(r) : "ok");
  r = libusb_detach_kernel_driver(h, 0);
  if (r < 0) FAIL("usb-hid-detach", "%s", libusb_error_name(r));
  r = libusb_claim_interface(h, 0);
  if (r < 0) { FAIL("usb-hid-claim", "%s", libusb_error_name(r)); return 1; }
  sysfs_driver(h, drv, sizeof drv);
  if (!strcmp(drv, "usbfs") && count_hidraw() == hidraw_before - 1) PASS("usb-hid-detach");
  else FAIL("usb-hid-detach", "driver now '%s', hidraw %d", drv, count_hidraw());

  // --- the exact sequence from the brief ---
  uint8_t f1[257], f0[14], in[257];
  f1[0] = 0xF1; for (int i = 1; i < 257; i++) f1[i] = (uint8_t)(255 - i);
  f0[0] = 0xF0; for (int i = 1; i < 14; i++) f0[i] = (uint8_t)(0x40 + i);
  int ok = 1;
  double s = now();
  ok &= set_report(h, 0xF1, f1, 257) == 257;
  ok &= set_report(h, 0xF0, f0, 14) == 14;
  memset(in, 0, sizeof in);
  ok &= get_report(h, 0xF0, in, 14) == 14 && !memcmp(in, f0, 14);
  memset(in, 0, sizeof in);
  ok &= get_report(h, 0xF1, in, 257) == 257 && !memcmp(in, f1, 257);
  double seq_ms = (now() - s) * 1e3;
  if (ok) PASS("usb-hid-feature-reports");
  else FAIL("usb-hid-feature-reports", "echo mismatch or transfer error");
  printf("INFO usb SET F1 + SET F0 + GET F0 + GET F1: %.2f ms\n", seq_ms);
  // Short GET: host asks for fewer bytes than the report has.
  memset(in, 0, sizeof in);
  r = get_report(h, 0xF1, in, 64);
  if (r == 64 && !memcmp(in, f1, 64)) PASS("usb-hid-short-get");
  else FAIL("usb-hid-short-get", "got %d", r);
  // Unknown report id must stall -> LIBUSB_ERROR_PIPE.
  r = get_report(h, 0xF5, in, 14);
  if (r == LIBUSB_ERROR_PIPE) PASS("usb-hid-unknown-report-stalls");
  else FAIL("usb-hid-unknown-report-stalls", "got %d", r);
  // A stalled OUT request with a data stage, and one without: both -> PIPE.
  memset(in, 0, 14);
  in[0] = 0xF5;
  r = set_report(h, 0xF5, in, 14);
  int r2 = libusb_control_transfer(h, 0x21, 0x0B /*SET_PROTOCOL*/, 1, 0, NULL, 0, TIMEOUT_MS);
  if (r == LIBUSB_ERROR_PIPE && r2 == LIBUSB_ERROR_PIPE && roundtrip(h, 0xF0, 14, 3) == 0)
    PASS("usb-hid-out-requests-stall");
  else
    FAIL("usb-hid-out-requests-stall", "SET_REPORT F5 %d, SET_PROTOCOL %d", r, r2);
  int pairs = getenv("HID_PAIRS") ? atoi(getenv("HID_PAIRS")) : 100;
  timing(h, 0xF0, 14, pairs);
  timing(h, 0xF1, 257, pairs);

  // --- give the device back to the kernel ---
  libusb_release_interface(h, 0);
  r = libusb_attach_kernel_driver(h, 0);
  usleep(100000);
  sysfs_driver(h, drv, sizeof drv);
  if (r == 0 && !strcmp(drv, "usbhid") && libusb_kernel_driver_active(h, 0) == 1) PASS("usb-hid-reattach");
  else FAIL("usb-hid-reattach", "attach=%s driver='%s'", libusb_error_name(r), drv);

  // --- re-enumeration: app -> bootloader -> app ---
  // usbfs only passes class requests to an interface this handle has claimed
  // (with usbhid bound they fail with LIBUSB_ERROR_IO), so detach + claim again.
  libusb_detach_kernel_driver(h, 0);
  libusb_claim_interface(h, 0);
  double t_cmd = now();
  command(h, 0xB0);
  libusb_release_interface(h, 0);
  libusb_close(h);
  if (stale_test) {
    // Same context, no re-init: does the list ever show the new device?
    h = find(&ctx, PID_BOOT, 3, 0, &found);
    printf("INFO same libusb context sees the re-enumerated device: %s\n", h ? "yes" : "no (stale list)");
    if (h) libusb_close(h);
  }
  h = find(&ctx, PID_BOOT, 10, 1, &found);
  if (!h) { FAIL("usb-reenumerate-bootloader", "1209:0002 did not appear"); return 1; }
  printf("INFO usb re-enumeration: command to open bootloader device %.1f ms\n", (now() - t_cmd) * 1e3);
  libusb_set_auto_detach_kernel_driver(h, 1);  // detaches usbhid on claim, re-attaches on release
  libusb_claim_interface(h, 0);
  if (roundtrip(h, 0xF0, 14, 99) == 0) PASS("usb-reenumerate-bootloader");
  else FAIL("usb-reenumerate-bootloader", "round trip failed");
  t_cmd = now();
  command(h, 0xA0);
  libusb_release_interface(h, 0);
  libusb_close(h);
  h = find(&ctx, PID_APP, 10, 1, &found);
  if (!h) { FAIL("usb-reenumerate-app", "1209:0001 did not come back"); return 1; }
  printf("INFO usb re-enumeration: command to open application device %.1f ms\n", (now() - t_cmd) * 1e3);
  libusb_set_auto_detach_kernel_driver(h, 1);
  libusb_claim_interface(h, 0);
  if (roundtrip(h, 0xF1, 257, 5) == 0) PASS("usb-reenumerate-app");
  else FAIL("usb-reenumerate-app", "round trip failed");
  command(h, 0xDD);  // tell the device daemon to clean up and exit
  libusb_release_interface(h, 0);
  libusb_close(h);
  libusb_exit(ctx);
  return failures ? 1 : 0;
}
