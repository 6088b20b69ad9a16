#include "pd_crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

struct pd_sha256 {
    EVP_MD_CTX *md;
};

struct pd_md5 {
    EVP_MD_CTX *md;
};

// One EVP context for `type`, or NULL.
static EVP_MD_CTX *pd_evp_start(const EVP_MD *type) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md != NULL && EVP_DigestInit_ex(md, type, NULL) != 1) {
        EVP_MD_CTX_free(md);
        return NULL;
    }
    return md;
}

// Finishes `md` into `out`; 1 when exactly `length` bytes were written.
static int pd_evp_finish(EVP_MD_CTX *md, uint8_t *out, unsigned int length) {
    unsigned int written = 0;
    if (md == NULL || EVP_DigestFinal_ex(md, out, &written) != 1) {
        return 0;
    }
    return written == length;
}

pd_sha256 *pd_sha256_create(void) {
    pd_sha256 *context = OPENSSL_zalloc(sizeof(pd_sha256));
    if (context == NULL) {
        return NULL;
    }
    context->md = pd_evp_start(EVP_sha256());
    if (context->md == NULL) {
        pd_sha256_free(context);
        return NULL;
    }
    return context;
}

int pd_sha256_update(pd_sha256 *context, const void *bytes, size_t length) {
    if (context == NULL || context->md == NULL) {
        return 0;
    }
    return EVP_DigestUpdate(context->md, bytes, length) == 1;
}

int pd_sha256_final(pd_sha256 *context, uint8_t out[PD_SHA256_LENGTH]) {
    if (context == NULL || context->md == NULL) {
        return 0;
    }
    return pd_evp_finish(context->md, out, PD_SHA256_LENGTH);
}

void pd_sha256_free(pd_sha256 *context) {
    if (context == NULL) {
        return;
    }
    EVP_MD_CTX_free(context->md);
    OPENSSL_free(context);
}

pd_md5 *pd_md5_create(void) {
    pd_md5 *context = OPENSSL_zalloc(sizeof(pd_md5));
    if (context == NULL) {
        return NULL;
    }
    context->md = pd_evp_start(EVP_md5());
    if (context->md == NULL) {
        pd_md5_free(context);
        return NULL;
    }
    return context;
}

int pd_md5_update(pd_md5 *context, const void *bytes, size_t length) {
    if (context == NULL || context->md == NULL) {
        return 0;
    }
    return EVP_DigestUpdate(context->md, bytes, length) == 1;
}

int pd_md5_final(pd_md5 *context, uint8_t out[PD_MD5_LENGTH]) {
    if (context == NULL || context->md == NULL) {
        return 0;
    }
    return pd_evp_finish(context->md, out, PD_MD5_LENGTH);
}

void pd_md5_free(pd_md5 *context) {
    if (context == NULL) {
        return;
    }
    EVP_MD_CTX_free(context->md);
    OPENSSL_free(context);
}

int pd_hmac_sha256(const void *key, size_t key_length, const void *message, size_t message_length,
                   uint8_t out[PD_SHA256_LENGTH]) {
    unsigned int written = 0;
    if (key_length > (size_t)INT32_MAX) {
        return 0;
    }
    static const uint8_t empty = 0;
    const unsigned char *result = HMAC(EVP_sha256(), key_length > 0 ? key : &empty, (int)key_length,
                                       message_length > 0 ? message : &empty, message_length, out, &written);
    return result != NULL && written == PD_SHA256_LENGTH;
}
