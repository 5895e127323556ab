/* The pn_* functions Tuneup calls, each forwarding to libqpid-proton opened with dlopen on first use (CQpidProton.h). */
#include "CQpidProton.h"

#include "CLazyLibrary.h"

static struct {
    pn_bytes_t (*pn_bytes)(size_t size, const char *start);
    const char * (*pn_condition_get_description)(pn_condition_t *condition);
    const char * (*pn_condition_get_name)(pn_condition_t *condition);
    _Bool (*pn_condition_is_set)(pn_condition_t *condition);
    pn_connection_t * (*pn_connection)(void);
    void (*pn_connection_close)(pn_connection_t *connection);
    void (*pn_connection_open)(pn_connection_t *connection);
    pn_condition_t * (*pn_connection_remote_condition)(pn_connection_t *connection);
    void (*pn_connection_set_container)(pn_connection_t *connection, const char *container);
    void (*pn_connection_set_hostname)(pn_connection_t *connection, const char *hostname);
    void (*pn_connection_set_password)(pn_connection_t *connection, const char *password);
    void (*pn_connection_set_user)(pn_connection_t *connection, const char *user);
    void (*pn_connection_wake)(pn_connection_t *connection);
    void (*pn_data_clear)(pn_data_t *data);
    int (*pn_data_put_binary)(pn_data_t *data, pn_bytes_t bytes);
    pn_delivery_t * (*pn_delivery)(pn_link_t *link, pn_delivery_tag_t tag);
    pn_disposition_t * (*pn_delivery_remote)(pn_delivery_t *delivery);
    uint64_t (*pn_delivery_remote_state)(pn_delivery_t *delivery);
    void (*pn_delivery_settle)(pn_delivery_t *delivery);
    pn_delivery_tag_t (*pn_delivery_tag)(pn_delivery_t *delivery);
    _Bool (*pn_delivery_updated)(pn_delivery_t *delivery);
    pn_condition_t * (*pn_disposition_condition)(pn_disposition_t *disposition);
    pn_delivery_tag_t (*pn_dtag)(const char *bytes, size_t size);
    pn_event_t * (*pn_event_batch_next)(pn_event_batch_t *batch);
    pn_connection_t * (*pn_event_connection)(pn_event_t *event);
    pn_delivery_t * (*pn_event_delivery)(pn_event_t *event);
    pn_link_t * (*pn_event_link)(pn_event_t *event);
    pn_session_t * (*pn_event_session)(pn_event_t *event);
    pn_transport_t * (*pn_event_transport)(pn_event_t *event);
    pn_event_type_t (*pn_event_type)(pn_event_t *event);
    int (*pn_link_credit)(pn_link_t *link);
    void (*pn_link_open)(pn_link_t *link);
    pn_condition_t * (*pn_link_remote_condition)(pn_link_t *link);
    pn_terminus_t * (*pn_link_remote_target)(pn_link_t *link);
    void (*pn_link_set_rcv_settle_mode)(pn_link_t *link, pn_rcv_settle_mode_t mode);
    void (*pn_link_set_snd_settle_mode)(pn_link_t *link, pn_snd_settle_mode_t mode);
    pn_terminus_t * (*pn_link_target)(pn_link_t *link);
    pn_message_t * (*pn_message)(void);
    pn_data_t * (*pn_message_body)(pn_message_t *msg);
    void (*pn_message_free)(pn_message_t *msg);
    ssize_t (*pn_message_send)(pn_message_t *msg, pn_link_t *sender, pn_rwbytes_t *buf);
    int (*pn_message_set_content_type)(pn_message_t *msg, const char *type);
    int (*pn_message_set_durable)(pn_message_t *msg, _Bool durable);
    int (*pn_message_set_id)(pn_message_t *msg, pn_msgid_t id);
    int (*pn_message_set_inferred)(pn_message_t *msg, _Bool inferred);
    pn_proactor_t * (*pn_proactor)(void);
    int (*pn_proactor_addr)(char *addr, size_t size, const char *host, const char *port);
    void (*pn_proactor_connect2)(pn_proactor_t *proactor, pn_connection_t *connection, pn_transport_t *transport, const char *addr);
    void (*pn_proactor_disconnect)(pn_proactor_t *proactor, pn_condition_t *condition);
    void (*pn_proactor_done)(pn_proactor_t *proactor, pn_event_batch_t *events);
    void (*pn_proactor_free)(pn_proactor_t *proactor);
    void (*pn_proactor_interrupt)(pn_proactor_t *proactor);
    void (*pn_proactor_set_timeout)(pn_proactor_t *proactor, pn_millis_t timeout);
    pn_event_batch_t * (*pn_proactor_wait)(pn_proactor_t *proactor);
    pn_sasl_t * (*pn_sasl)(pn_transport_t *transport);
    void (*pn_sasl_set_allow_insecure_mechs)(pn_sasl_t *sasl, _Bool insecure);
    pn_link_t * (*pn_sender)(pn_session_t *session, const char *name);
    pn_session_t * (*pn_session)(pn_connection_t *connection);
    void (*pn_session_open)(pn_session_t *session);
    pn_condition_t * (*pn_session_remote_condition)(pn_session_t *session);
    const char * (*pn_terminus_get_address)(pn_terminus_t *terminus);
    int (*pn_terminus_set_address)(pn_terminus_t *terminus, const char *address);
    int (*pn_terminus_set_durability)(pn_terminus_t *terminus, pn_durability_t durability);
    pn_transport_t * (*pn_transport)(void);
    pn_condition_t * (*pn_transport_condition)(pn_transport_t *transport);
} api;
static const char *const symbols[] = {"pn_bytes", "pn_condition_get_description", "pn_condition_get_name", "pn_condition_is_set", "pn_connection", "pn_connection_close", "pn_connection_open", "pn_connection_remote_condition", "pn_connection_set_container", "pn_connection_set_hostname", "pn_connection_set_password", "pn_connection_set_user", "pn_connection_wake", "pn_data_clear", "pn_data_put_binary", "pn_delivery", "pn_delivery_remote", "pn_delivery_remote_state", "pn_delivery_settle", "pn_delivery_tag", "pn_delivery_updated", "pn_disposition_condition", "pn_dtag", "pn_event_batch_next", "pn_event_connection", "pn_event_delivery", "pn_event_link", "pn_event_session", "pn_event_transport", "pn_event_type", "pn_link_credit", "pn_link_open", "pn_link_remote_condition", "pn_link_remote_target", "pn_link_set_rcv_settle_mode", "pn_link_set_snd_settle_mode", "pn_link_target", "pn_message", "pn_message_body", "pn_message_free", "pn_message_send", "pn_message_set_content_type", "pn_message_set_durable", "pn_message_set_id", "pn_message_set_inferred", "pn_proactor", "pn_proactor_addr", "pn_proactor_connect2", "pn_proactor_disconnect", "pn_proactor_done", "pn_proactor_free", "pn_proactor_interrupt", "pn_proactor_set_timeout", "pn_proactor_wait", "pn_sasl", "pn_sasl_set_allow_insecure_mechs", "pn_sender", "pn_session", "pn_session_open", "pn_session_remote_condition", "pn_terminus_get_address", "pn_terminus_set_address", "pn_terminus_set_durability", "pn_transport", "pn_transport_condition"};
_Static_assert(sizeof api == sizeof symbols / sizeof *symbols * sizeof(void *), "one symbol per function pointer, in order");
static tuneup_lazy_library library = {
    .file = "libqpid-proton.so.11", .package = "libqpid-proton11", .purpose = "publishing CFX messages needs Qpid Proton",
    .symbols = symbols, .slots = (void **)&api, .count = sizeof symbols / sizeof *symbols,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

const char *tuneup_proton_load(void) { return tuneup_lazy_load(&library); }

/* A stub called without tuneup_proton_load's check, with the library missing: the one line, exit 74. */
static void require(void) { tuneup_lazy_require(&library); }

/* Hidden: the library's own calls to its exported functions, and other libraries', never land here. */
#define STUB __attribute__((visibility("hidden")))
STUB pn_bytes_t pn_bytes(size_t size, const char *start) { require(); return api.pn_bytes(size, start); }
STUB const char * pn_condition_get_description(pn_condition_t *condition) { require(); return api.pn_condition_get_description(condition); }
STUB const char * pn_condition_get_name(pn_condition_t *condition) { require(); return api.pn_condition_get_name(condition); }
STUB _Bool pn_condition_is_set(pn_condition_t *condition) { require(); return api.pn_condition_is_set(condition); }
STUB pn_connection_t * pn_connection(void) { require(); return api.pn_connection(); }
STUB void pn_connection_close(pn_connection_t *connection) { require(); api.pn_connection_close(connection); }
STUB void pn_connection_open(pn_connection_t *connection) { require(); api.pn_connection_open(connection); }
STUB pn_condition_t * pn_connection_remote_condition(pn_connection_t *connection) { require(); return api.pn_connection_remote_condition(connection); }
STUB void pn_connection_set_container(pn_connection_t *connection, const char *container) { require(); api.pn_connection_set_container(connection, container); }
STUB void pn_connection_set_hostname(pn_connection_t *connection, const char *hostname) { require(); api.pn_connection_set_hostname(connection, hostname); }
STUB void pn_connection_set_password(pn_connection_t *connection, const char *password) { require(); api.pn_connection_set_password(connection, password); }
STUB void pn_connection_set_user(pn_connection_t *connection, const char *user) { require(); api.pn_connection_set_user(connection, user); }
STUB void pn_connection_wake(pn_connection_t *connection) { require(); api.pn_connection_wake(connection); }
STUB void pn_data_clear(pn_data_t *data) { require(); api.pn_data_clear(data); }
STUB int pn_data_put_binary(pn_data_t *data, pn_bytes_t bytes) { require(); return api.pn_data_put_binary(data, bytes); }
STUB pn_delivery_t * pn_delivery(pn_link_t *link, pn_delivery_tag_t tag) { require(); return api.pn_delivery(link, tag); }
STUB pn_disposition_t * pn_delivery_remote(pn_delivery_t *delivery) { require(); return api.pn_delivery_remote(delivery); }
STUB uint64_t pn_delivery_remote_state(pn_delivery_t *delivery) { require(); return api.pn_delivery_remote_state(delivery); }
STUB void pn_delivery_settle(pn_delivery_t *delivery) { require(); api.pn_delivery_settle(delivery); }
STUB pn_delivery_tag_t pn_delivery_tag(pn_delivery_t *delivery) { require(); return api.pn_delivery_tag(delivery); }
STUB _Bool pn_delivery_updated(pn_delivery_t *delivery) { require(); return api.pn_delivery_updated(delivery); }
STUB pn_condition_t * pn_disposition_condition(pn_disposition_t *disposition) { require(); return api.pn_disposition_condition(disposition); }
STUB pn_delivery_tag_t pn_dtag(const char *bytes, size_t size) { require(); return api.pn_dtag(bytes, size); }
STUB pn_event_t * pn_event_batch_next(pn_event_batch_t *batch) { require(); return api.pn_event_batch_next(batch); }
STUB pn_connection_t * pn_event_connection(pn_event_t *event) { require(); return api.pn_event_connection(event); }
STUB pn_delivery_t * pn_event_delivery(pn_event_t *event) { require(); return api.pn_event_delivery(event); }
STUB pn_link_t * pn_event_link(pn_event_t *event) { require(); return api.pn_event_link(event); }
STUB pn_session_t * pn_event_session(pn_event_t *event) { require(); return api.pn_event_session(event); }
STUB pn_transport_t * pn_event_transport(pn_event_t *event) { require(); return api.pn_event_transport(event); }
STUB pn_event_type_t pn_event_type(pn_event_t *event) { require(); return api.pn_event_type(event); }
STUB int pn_link_credit(pn_link_t *link) { require(); return api.pn_link_credit(link); }
STUB void pn_link_open(pn_link_t *link) { require(); api.pn_link_open(link); }
STUB pn_condition_t * pn_link_remote_condition(pn_link_t *link) { require(); return api.pn_link_remote_condition(link); }
STUB pn_terminus_t * pn_link_remote_target(pn_link_t *link) { require(); return api.pn_link_remote_target(link); }
STUB void pn_link_set_rcv_settle_mode(pn_link_t *link, pn_rcv_settle_mode_t mode) { require(); api.pn_link_set_rcv_settle_mode(link, mode); }
STUB void pn_link_set_snd_settle_mode(pn_link_t *link, pn_snd_settle_mode_t mode) { require(); api.pn_link_set_snd_settle_mode(link, mode); }
STUB pn_terminus_t * pn_link_target(pn_link_t *link) { require(); return api.pn_link_target(link); }
STUB pn_message_t * pn_message(void) { require(); return api.pn_message(); }
STUB pn_data_t * pn_message_body(pn_message_t *msg) { require(); return api.pn_message_body(msg); }
STUB void pn_message_free(pn_message_t *msg) { require(); api.pn_message_free(msg); }
STUB ssize_t pn_message_send(pn_message_t *msg, pn_link_t *sender, pn_rwbytes_t *buf) { require(); return api.pn_message_send(msg, sender, buf); }
STUB int pn_message_set_content_type(pn_message_t *msg, const char *type) { require(); return api.pn_message_set_content_type(msg, type); }
STUB int pn_message_set_durable(pn_message_t *msg, _Bool durable) { require(); return api.pn_message_set_durable(msg, durable); }
STUB int pn_message_set_id(pn_message_t *msg, pn_msgid_t id) { require(); return api.pn_message_set_id(msg, id); }
STUB int pn_message_set_inferred(pn_message_t *msg, _Bool inferred) { require(); return api.pn_message_set_inferred(msg, inferred); }
STUB pn_proactor_t * pn_proactor(void) { require(); return api.pn_proactor(); }
STUB int pn_proactor_addr(char *addr, size_t size, const char *host, const char *port) { require(); return api.pn_proactor_addr(addr, size, host, port); }
STUB void pn_proactor_connect2(pn_proactor_t *proactor, pn_connection_t *connection, pn_transport_t *transport, const char *addr) { require(); api.pn_proactor_connect2(proactor, connection, transport, addr); }
STUB void pn_proactor_disconnect(pn_proactor_t *proactor, pn_condition_t *condition) { require(); api.pn_proactor_disconnect(proactor, condition); }
STUB void pn_proactor_done(pn_proactor_t *proactor, pn_event_batch_t *events) { require(); api.pn_proactor_done(proactor, events); }
STUB void pn_proactor_free(pn_proactor_t *proactor) { require(); api.pn_proactor_free(proactor); }
STUB void pn_proactor_interrupt(pn_proactor_t *proactor) { require(); api.pn_proactor_interrupt(proactor); }
STUB void pn_proactor_set_timeout(pn_proactor_t *proactor, pn_millis_t timeout) { require(); api.pn_proactor_set_timeout(proactor, timeout); }
STUB pn_event_batch_t * pn_proactor_wait(pn_proactor_t *proactor) { require(); return api.pn_proactor_wait(proactor); }
STUB pn_sasl_t * pn_sasl(pn_transport_t *transport) { require(); return api.pn_sasl(transport); }
STUB void pn_sasl_set_allow_insecure_mechs(pn_sasl_t *sasl, _Bool insecure) { require(); api.pn_sasl_set_allow_insecure_mechs(sasl, insecure); }
STUB pn_link_t * pn_sender(pn_session_t *session, const char *name) { require(); return api.pn_sender(session, name); }
STUB pn_session_t * pn_session(pn_connection_t *connection) { require(); return api.pn_session(connection); }
STUB void pn_session_open(pn_session_t *session) { require(); api.pn_session_open(session); }
STUB pn_condition_t * pn_session_remote_condition(pn_session_t *session) { require(); return api.pn_session_remote_condition(session); }
STUB const char * pn_terminus_get_address(pn_terminus_t *terminus) { require(); return api.pn_terminus_get_address(terminus); }
STUB int pn_terminus_set_address(pn_terminus_t *terminus, const char *address) { require(); return api.pn_terminus_set_address(terminus, address); }
STUB int pn_terminus_set_durability(pn_terminus_t *terminus, pn_durability_t durability) { require(); return api.pn_terminus_set_durability(terminus, durability); }
STUB pn_transport_t * pn_transport(void) { require(); return api.pn_transport(); }
STUB pn_condition_t * pn_transport_condition(pn_transport_t *transport) { require(); return api.pn_transport_condition(transport); }
