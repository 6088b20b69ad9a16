#include "pd_curl.h"

#include <pthread.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result = CURLE_FAILED_INIT;

static void global_init(void) {
    global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

CURLcode pd_curl_global_init_once(void) {
    pthread_once(&global_once, global_init);
    return global_result;
}

CURLcode pd_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode pd_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode pd_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode pd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode pd_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode pd_curl_setopt_read_function(CURL *handle, pd_curl_read_fn function) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, function);
}

CURLcode pd_curl_setopt_seek_function(CURL *handle, pd_curl_seek_fn function) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, function);
}

CURLcode pd_curl_setopt_header_function(CURL *handle, pd_curl_data_fn function) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, function);
}

CURLcode pd_curl_setopt_write_function(CURL *handle, pd_curl_data_fn function) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, function);
}

CURLcode pd_curl_setopt_xferinfo_function(CURL *handle, pd_curl_xferinfo_fn function) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, function);
}

CURLcode pd_curl_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode pd_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode pd_curl_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

size_t pd_curl_readfunc_abort(void) {
    return CURL_READFUNC_ABORT;
}
