// pd_crypto: the few libcrypto (OpenSSL) digests PhotoDrain needs, behind plain C functions.
//
// SHA-256 is streamed (init, update, final) so a file is hashed in chunks, never read whole.
// HMAC-SHA256 is one call, for the S3 request signer. MD5 is streamed too: S3-compatible stores
// compute an object's ETag as the MD5 of its bytes, so it is what the store's own proof of receipt
// is checked against (never a content hash of the library's).
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

/// The length of an MD5 digest in bytes.
#define PD_MD5_LENGTH 16

/// A running MD5 computation.
typedef struct pd_md5 pd_md5;

/// Starts an MD5 computation; NULL when libcrypto cannot allocate or initialise one.
pd_md5 *pd_md5_create(void);
/// Feeds bytes; returns 1 on success, 0 on failure.
int pd_md5_update(pd_md5 *context, const void *bytes, size_t length);
/// Writes the 16-byte digest to `out`; returns 1 on success, 0 on failure. Call at most once.
int pd_md5_final(pd_md5 *context, uint8_t out[PD_MD5_LENGTH]);
/// Frees the computation (NULL is allowed).
void pd_md5_free(pd_md5 *context);

/// HMAC-SHA256 of `message` under `key`, written to `out` (32 bytes); returns 1 on success, 0 on failure.
int pd_hmac_sha256(const void *key, size_t key_length, const void *message, size_t message_length,
                   uint8_t out[PD_SHA256_LENGTH]);

#ifdef __cplusplus
}
#endif

#endif
