// bt-rfcomm: RFCOMM proof over btvirt's two virtual controllers.
//
//   bt-rfcomm addr hciN                          print the controller's bdaddr (HCIGETDEVINFO)
//   bt-rfcomm server LOCAL_BDADDR CHANNEL NBYTES  accept one connection, read NBYTES,
//                                                check, send NBYTES back (other pattern)
//   bt-rfcomm client LOCAL_BDADDR REMOTE_BDADDR CHANNEL NBYTES
//                                                bind to LOCAL (hci1), connect, send,
//                                                receive, check; prints timings
//   bt-rfcomm afcheck                            socket(AF_BLUETOOTH, SOCK_STREAM,
//                                                BTPROTO_RFCOMM): prints errno
// Self-contained (no libbluetooth): only the kernel ABI from the headers.
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/rfcomm.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// "AA:BB:CC:DD:EE:FF" <-> bdaddr_t (stored little-endian: b[0] is the last byte).
static int parse_ba(const char *s, bdaddr_t *ba) {
  unsigned v[6];
  if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return -1;
  for (int i = 0; i < 6; i++) ba->b[5 - i] = (uint8_t)v[i];
  return 0;
}
static void fmt_ba(const bdaddr_t *ba, char *out) {
  sprintf(out, "%02X:%02X:%02X:%02X:%02X:%02X", ba->b[5], ba->b[4], ba->b[3], ba->b[2], ba->b[1], ba->b[0]);
}

static uint8_t pattern(int dir, size_t i) { return (uint8_t)(dir ? (i * 13 + 7) : (i * 31 + 1)); }

static int write_all(int fd, const uint8_t *b, size_t n) {
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0) { if (errno == EINTR) continue; return -1; }
    b += w; n -= w;
  }
  return 0;
}
static int read_all(int fd, uint8_t *b, size_t n) {
  while (n) {
    ssize_t r = read(fd, b, n);
    if (r < 0) { if (errno == EINTR) continue; return -1; }
    if (r == 0) { errno = ECONNRESET; return -1; }
    b += r; n -= r;
  }
  return 0;
}
static int check(const uint8_t *b, size_t n, int dir) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern(dir, i)) return (int)i;
  return -1;
}

static int cmd_addr(const char *dev) {
  int s = socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI);
  if (s < 0) { perror("socket HCI"); return 1; }
  struct hci_dev_info di = {.dev_id = (uint16_t)atoi(dev + 3)};  // "hciN"
  if (ioctl(s, HCIGETDEVINFO, &di) < 0) { perror("HCIGETDEVINFO"); return 1; }
  char a[18];
  fmt_ba(&di.bdaddr, a);
  printf("%s\n", a);
  return 0;
}

static int cmd_server(const char *local, int channel, size_t n) {
  struct sockaddr_rc sa = {.rc_family = AF_BLUETOOTH, .rc_channel = (uint8_t)channel};
  if (parse_ba(local, &sa.rc_bdaddr)) { fprintf(stderr, "bad address %s\n", local); return 1; }
  int s = socket(AF_BLUETOOTH, SOCK_STREAM, BTPROTO_RFCOMM);
  if (s < 0) { printf("FAIL bt-rfcomm-server: socket: %s\n", strerror(errno)); return 1; }
  if (bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 1) < 0) {
    printf("FAIL bt-rfcomm-server: bind/listen: %s\n", strerror(errno));
    return 1;
  }
  printf("server: listening on %s channel %d\n", local, channel);
  fflush(stdout);
  struct sockaddr_rc peer;
  socklen_t pl = sizeof peer;
  int c = accept(s, (struct sockaddr *)&peer, &pl);
  if (c < 0) { printf("FAIL bt-rfcomm-server: accept: %s\n", strerror(errno)); return 1; }
  char pa[18];
  fmt_ba(&peer.rc_bdaddr, pa);
  printf("server: connection from %s channel %d\n", pa, peer.rc_channel);
  uint8_t *buf = malloc(n);
  if (read_all(c, buf, n) < 0) { printf("FAIL bt-rfcomm-server: read: %s\n", strerror(errno)); return 1; }
  int bad = check(buf, n, 0);
  if (bad >= 0) { printf("FAIL bt-rfcomm-server: data differs at %d\n", bad); return 1; }
  for (size_t i = 0; i < n; i++) buf[i] = pattern(1, i);
  if (write_all(c, buf, n) < 0) { printf("FAIL bt-rfcomm-server: write: %s\n", strerror(errno)); return 1; }
  // Wait for the client to close: closing first could drop unsent data.
  char x;
  while (read(c, &x, 1) > 0) {}
  close(c);
  close(s);
  printf("PASS bt-rfcomm-server-received-%zu\n", n);
  return 0;
}

static int cmd_client(const char *local, const char *remote, int channel, size_t n) {
  struct sockaddr_rc la = {.rc_family = AF_BLUETOOTH, .rc_channel = 0};
  struct sockaddr_rc ra = {.rc_family = AF_BLUETOOTH, .rc_channel = (uint8_t)channel};
  if (parse_ba(local, &la.rc_bdaddr) || parse_ba(remote, &ra.rc_bdaddr)) return 1;
  int s = socket(AF_BLUETOOTH, SOCK_STREAM, BTPROTO_RFCOMM);
  if (s < 0) { printf("FAIL bt-rfcomm-client: socket: %s\n", strerror(errno)); return 1; }
  // Binding to the local controller's address (channel 0) selects hci1 as the source.
  if (bind(s, (struct sockaddr *)&la, sizeof la) < 0) {
    printf("FAIL bt-rfcomm-client: bind: %s\n", strerror(errno));
    return 1;
  }
  double t = now();
  if (connect(s, (struct sockaddr *)&ra, sizeof ra) < 0) {
    printf("FAIL bt-rfcomm-client: connect: %s (errno %d)\n", strerror(errno), errno);
    return 1;
  }
  double t_conn = now() - t;
  uint8_t *buf = malloc(n);
  for (size_t i = 0; i < n; i++) buf[i] = pattern(0, i);
  t = now();
  if (write_all(s, buf, n) < 0) { printf("FAIL bt-rfcomm-client: write: %s\n", strerror(errno)); return 1; }
  memset(buf, 0, n);
  if (read_all(s, buf, n) < 0) { printf("FAIL bt-rfcomm-client: read: %s\n", strerror(errno)); return 1; }
  double t_xfer = now() - t;
  int bad = check(buf, n, 1);
  if (bad >= 0) { printf("FAIL bt-rfcomm-client: data differs at %d\n", bad); return 1; }
  close(s);
  printf("INFO rfcomm connect %.1f ms; %zu bytes each way in %.1f ms\n", t_conn * 1e3, n, t_xfer * 1e3);
  printf("PASS bt-rfcomm-exchange-%zu\n", n);
  return 0;
}

static int cmd_afcheck(void) {
  int s = socket(AF_BLUETOOTH, SOCK_STREAM, BTPROTO_RFCOMM);
  if (s >= 0) { printf("socket(AF_BLUETOOTH, RFCOMM) ok\n"); close(s); return 0; }
  printf("socket(AF_BLUETOOTH, RFCOMM) failed: errno %d (%s)\n", errno, strerror(errno));
  return 2;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 3 && !strcmp(argv[1], "addr")) return cmd_addr(argv[2]);
  if (argc == 5 && !strcmp(argv[1], "server")) return cmd_server(argv[2], atoi(argv[3]), strtoul(argv[4], 0, 0));
  if (argc == 6 && !strcmp(argv[1], "client"))
    return cmd_client(argv[2], argv[3], atoi(argv[4]), strtoul(argv[5], 0, 0));
  if (argc == 2 && !strcmp(argv[1], "afcheck")) return cmd_afcheck();
  fprintf(stderr, "usage: see the comment at the top of bt-rfcomm.c\n");
  return 64;
}
