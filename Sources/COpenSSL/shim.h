#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>

static inline void copenssl_free(void *p) { OPENSSL_free(p); }
static inline long copenssl_ctx_set_min_proto_version(SSL_CTX *ctx, int v) {
    return SSL_CTX_set_min_proto_version(ctx, v);
}
#endif
