// pd_crypto: the few libcrypto (OpenSSL) digests PhotoDrain needs, behind plain C functions.
//
// SHA-256 is streamed (init, update, final) so a file is hashed in chunks, never read whole.
// HMAC-SHA256 is one call, for the S3 request signer.
#ifndef PD_CRYPTO_H
#define PD_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The length of a SHA-256 digest in bytes.
#define PD_SHA256_LENGTH 32

/// A running SHA-256 computation.
typedef struct pd_sha256 pd_sha256;

/// Starts a SHA-256 computation; NULL when libcrypto cannot allocate or initialise one.
pd_sha256 *pd_sha256_create(void);
/// Feeds bytes; returns 1 on success, 0 on failure.
int pd_sha256_update(pd_sha256 *context, const void *bytes, size_t length);
/// Writes the 32-byte digest to `out`; returns 1 on success, 0 on failure. Call at most once.
int pd_sha256_final(pd_sha256 *context, uint8_t out[PD_SHA256_LENGTH]);
/// Frees the computation (NULL is allowed).
void pd_sha256_free(pd_sha256 *context);

/// HMAC-SHA256 of `message` under `key`, written to `out` (32 bytes); returns 1 on success, 0 on failure.
int pd_hmac_sha256(const void *key, size_t key_length, const void *message, size_t message_length,
                   uint8_t out[PD_SHA256_LENGTH]);

#ifdef __cplusplus
}
#endif

#endif
