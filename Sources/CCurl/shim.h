// libcurl (Debian: libcurl4-openssl-dev), found with pkg-config "libcurl".
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these typed wrappers can be.
#include <curl/curl.h>

static inline CURLcode tuneup_curl_set_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode tuneup_curl_set_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode tuneup_curl_set_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode tuneup_curl_set_write_function(CURL *curl,
                                                      size_t (*function)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, function);
}
static inline CURLcode tuneup_curl_set_progress_function(CURL *curl,
                                                         int (*function)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, function);
}
static inline CURLcode tuneup_curl_get_long(CURL *curl, CURLINFO info, long *value) {
    return curl_easy_getinfo(curl, info, value);
}
static inline CURLcode tuneup_curl_get_off(CURL *curl, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(curl, info, value);
}
static inline CURLcode tuneup_curl_get_string(CURL *curl, CURLINFO info, const char **value) {
    return curl_easy_getinfo(curl, info, value);
}
