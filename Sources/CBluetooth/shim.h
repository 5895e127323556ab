#ifndef TUNEUP_CBLUETOOTH_SHIM_H
#define TUNEUP_CBLUETOOTH_SHIM_H

/* BlueZ's libbluetooth and the kernel's Bluetooth socket ABI, for the BluetoothTransport target.
 * Swift cannot import function-like macros (_IOR, BDADDR_ANY, htobs) or variadic functions (prctl), so the few
 * we need are spelled out here. Everything else is called directly from Swift. */

#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/rfcomm.h>
#include <bluetooth/l2cap.h>
#include <bluetooth/sdp.h>
#include <bluetooth/sdp_lib.h>

/* The HCI ioctls (<bluetooth/hci.h> defines them with _IOR, which Swift does not import):
 * _IOR('H', 210, int) and _IOR('H', 211, int) = read | sizeof(int) << 16 | 'H' << 8 | nr. */
#define TUNEUP_HCIGETDEVLIST 0x800448D2UL
#define TUNEUP_HCIGETDEVINFO 0x800448D3UL
_Static_assert(TUNEUP_HCIGETDEVLIST == HCIGETDEVLIST, "HCIGETDEVLIST differs from <bluetooth/hci.h>");
_Static_assert(TUNEUP_HCIGETDEVINFO == HCIGETDEVINFO, "HCIGETDEVINFO differs from <bluetooth/hci.h>");

/* The kernel ABI the Swift code relies on (it builds and reads these structures byte by byte). */
_Static_assert(sizeof(struct sockaddr_rc) == 10, "sockaddr_rc is 10 bytes");
_Static_assert(sizeof(struct hci_dev_req) == 8, "hci_dev_req is 8 bytes");
_Static_assert(sizeof(struct sockaddr_l2) == 14, "sockaddr_l2 is 14 bytes (BLE: CID and address type)");

/* ioctl with a pointer argument (ioctl is variadic in C). */
static inline int tuneup_bt_ioctl(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}

/* Names the calling thread (Linux keeps at most 15 bytes). */
static inline void tuneup_bt_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

/* HCI device flag bits (enum in <bluetooth/hci.h>, spelled out so Swift gets plain integers). */
#define TUNEUP_HCI_UP 0
#define TUNEUP_HCI_PSCAN 3
#define TUNEUP_HCI_ISCAN 4
_Static_assert(TUNEUP_HCI_UP == HCI_UP && TUNEUP_HCI_PSCAN == HCI_PSCAN && TUNEUP_HCI_ISCAN == HCI_ISCAN,
               "HCI flag bits differ from <bluetooth/hci.h>");

#endif
