/* libcrypto's message-digest API (EVP), for SHA-256. Installed by Debian's libssl-dev. */
#ifndef PHOTODRAIN_CCRYPTO_SHIM_H
#define PHOTODRAIN_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#endif
