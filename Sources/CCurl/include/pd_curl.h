// pd_curl: typed wrappers over libcurl's variadic entry points for PhotoDrain.
//
// curl_easy_setopt and curl_easy_getinfo take a variable argument whose C type depends on the
// option. Swift cannot call C variadics, so each argument type gets one typed function here. The
// Transfer module calls libcurl only through these functions and the plain easy API.
#ifndef PD_CURL_H
#define PD_CURL_H

#include <curl/curl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The read callback type (CURLOPT_READFUNCTION).
typedef size_t (*pd_curl_read_fn)(char *buffer, size_t size, size_t nitems, void *userdata);
/// The header and body callback type (CURLOPT_HEADERFUNCTION, CURLOPT_WRITEFUNCTION).
typedef size_t (*pd_curl_data_fn)(char *buffer, size_t size, size_t nitems, void *userdata);
/// The progress callback type (CURLOPT_XFERINFOFUNCTION); a non-zero return aborts the transfer.
typedef int (*pd_curl_xferinfo_fn)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                   curl_off_t ultotal, curl_off_t ulnow);

/// The seek callback type (CURLOPT_SEEKFUNCTION): libcurl rewinds the body with it before
/// re-sending on a fresh connection. Returns CURL_SEEKFUNC_OK, _FAIL or _CANTSEEK.
typedef int (*pd_curl_seek_fn)(void *userdata, curl_off_t offset, int origin);

/// Initialises libcurl's global state once per process; later calls return the first result.
CURLcode pd_curl_global_init_once(void);

/// Sets an option whose argument is a `long`.
CURLcode pd_curl_setopt_long(CURL *handle, CURLoption option, long value);
/// Sets an option whose argument is a `curl_off_t`.
CURLcode pd_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
/// Sets an option whose argument is a C string (libcurl copies it).
CURLcode pd_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
/// Sets an option whose argument is a data pointer (callback user data).
CURLcode pd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
/// Sets an option whose argument is a header list; the list must outlive the transfer.
CURLcode pd_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
/// Sets CURLOPT_READFUNCTION.
CURLcode pd_curl_setopt_read_function(CURL *handle, pd_curl_read_fn function);
/// Sets CURLOPT_SEEKFUNCTION.
CURLcode pd_curl_setopt_seek_function(CURL *handle, pd_curl_seek_fn function);
/// Sets CURLOPT_HEADERFUNCTION.
CURLcode pd_curl_setopt_header_function(CURL *handle, pd_curl_data_fn function);
/// Sets CURLOPT_WRITEFUNCTION.
CURLcode pd_curl_setopt_write_function(CURL *handle, pd_curl_data_fn function);
/// Sets CURLOPT_XFERINFOFUNCTION.
CURLcode pd_curl_setopt_xferinfo_function(CURL *handle, pd_curl_xferinfo_fn function);

/// Reads an info value of type `long`.
CURLcode pd_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
/// A string-valued CURLINFO (owned by libcurl).
CURLcode pd_curl_getinfo_string(CURL *handle, CURLINFO info, char **value);
/// Reads an info value of type `curl_off_t`.
CURLcode pd_curl_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);

/// The value a read callback returns to abort the transfer.
size_t pd_curl_readfunc_abort(void);

#ifdef __cplusplus
}
#endif

#endif
