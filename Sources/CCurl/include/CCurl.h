#ifndef TUNEUP_CCURL_H
#define TUNEUP_CCURL_H

/* libcurl (Debian: libcurl4-openssl-dev for this header; libcurl4 at run time), loaded with dlopen on first use
 * rather than linked: it brings some twenty-five libraries (TLS, LDAP, Kerberos, SSH, IDN...) that every other command
 * would otherwise map at start-up (issue 17 §5). The curl_* functions below that Tuneup calls, and the typed
 * wrappers, are defined in curl.c: each loads the library once and calls its function. Callers that can report an
 * error first call tuneup_curl_load (AudioInput does): when the library is missing, a stub prints that line and
 * exits with 74. */
#include <curl/curl.h>

/* NULL once libcurl is loaded (for good), else one line saying why it cannot be (the same line every call). */
const char *tuneup_curl_load(void);

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these typed wrappers can be. */
CURLcode tuneup_curl_set_long(CURL *curl, CURLoption option, long value);
CURLcode tuneup_curl_set_pointer(CURL *curl, CURLoption option, void *value);
CURLcode tuneup_curl_set_string(CURL *curl, CURLoption option, const char *value);
CURLcode tuneup_curl_set_write_function(CURL *curl, size_t (*function)(char *, size_t, size_t, void *));
CURLcode tuneup_curl_set_progress_function(CURL *curl,
                                           int (*function)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t));
CURLcode tuneup_curl_get_long(CURL *curl, CURLINFO info, long *value);
CURLcode tuneup_curl_get_off(CURL *curl, CURLINFO info, curl_off_t *value);
CURLcode tuneup_curl_get_string(CURL *curl, CURLINFO info, const char **value);

#endif
