// Debian's Qpid Proton C library (libqpid-proton11-dev for these headers; libqpid-proton11 at run time): the AMQP 1.0
// engine and its proactor, loaded with dlopen on first use rather than linked, so that only `station run --cfx` maps
// it and the TLS libraries it brings (about a millisecond of every other command's start-up: docs/packaging.md). The
// pn_* functions Tuneup calls are defined in proton.c: each loads the library once and calls its function. The
// publisher calls tuneup_proton_load first: when the library is missing, it reports that line.
#ifndef TUNEUP_CQPIDPROTON_H
#define TUNEUP_CQPIDPROTON_H
#include <string.h>
#include <proton/condition.h>
#include <proton/connection.h>
#include <proton/delivery.h>
#include <proton/disposition.h>
#include <proton/event.h>
#include <proton/link.h>
#include <proton/message.h>
#include <proton/proactor.h>
#include <proton/sasl.h>
#include <proton/session.h>
#include <proton/terminus.h>
#include <proton/transport.h>
#include <proton/codec.h>

// Swift cannot build a pn_atom_t's union or a pn_bytes_t from a string easily: two small helpers.
static inline int tuneup_pn_message_set_string_id(pn_message_t *message, const char *id) {
    pn_atom_t atom;
    atom.type = PN_STRING;
    atom.u.as_bytes = pn_bytes(strlen(id), id);
    return pn_message_set_id(message, atom);
}

// The body as one AMQP data section (binary; the message is "inferred").
static inline int tuneup_pn_message_set_data_body(pn_message_t *message, const char *bytes, size_t size) {
    pn_data_t *body = pn_message_body(message);
    pn_data_clear(body);
    pn_message_set_inferred(message, true);
    return pn_data_put_binary(body, pn_bytes(size, bytes));
}

static inline pn_delivery_t *tuneup_pn_delivery_with_tag(pn_link_t *link, uint64_t tag) {
    return pn_delivery(link, pn_dtag((const char *)&tag, sizeof tag));
}

static inline uint64_t tuneup_pn_delivery_tag_u64(pn_delivery_t *delivery) {
    pn_delivery_tag_t tag = pn_delivery_tag(delivery);
    uint64_t value = 0;
    if (tag.size == sizeof value) memcpy(&value, tag.start, sizeof value);
    return value;
}
/* NULL once libqpid-proton is loaded (for good), else one line saying why it cannot be (the same line every call). */
const char *tuneup_proton_load(void);

#endif
