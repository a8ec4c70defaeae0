#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode ccurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*ccurl_write_cb)(char *, size_t, size_t, void *);
static inline CURLcode ccurl_easy_setopt_write(CURL *h, CURLoption o, ccurl_write_cb v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

/* APNs client: OpenSSL context hook (adds the extra CA), multi pointers, info_read result. */
typedef CURLcode (*ccurl_ssl_ctx_cb)(CURL *, void *, void *);
static inline CURLcode ccurl_easy_setopt_ssl_ctx_function(CURL *h, ccurl_ssl_ctx_cb v) { return curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, v); }
static inline CURLcode ccurl_msg_result(const CURLMsg *m) { return m->data.result; }
#endif
