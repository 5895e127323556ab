#ifndef TUNEUP_CLIBUSB_SHIM_H
#define TUNEUP_CLIBUSB_SHIM_H

/* libusb-1.0 for the USB host back end (Sources/USBTransport). libusb.h's static inline helpers
 * (libusb_fill_control_setup, libusb_fill_control_transfer, libusb_control_transfer_get_data,
 * libusb_get_string_descriptor) import into Swift as they are; the wrappers below cover what does not. */

#include <libusb.h>
#include <sys/prctl.h>

/* libusb_set_option is variadic, which Swift cannot call: one wrapper per option shape. */
static inline int tuneup_libusb_set_log_level(libusb_context *ctx, int level) {
    return libusb_set_option(ctx, LIBUSB_OPTION_LOG_LEVEL, level);
}

/* Names the calling thread (the kernel keeps 15 bytes), so `top -H` and gdb show libusb's event thread. */
static inline void tuneup_libusb_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

#endif
