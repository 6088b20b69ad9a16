// pd_webp: a small C shim over libwebp for PhotoDrain.
//
// libwebp reports errors as status codes and never jumps or exits; the shim keeps the bytes, the
// decoder configuration and the scratch chroma planes in C, so Swift sees a status, a message and
// one opaque decoder, as with the JPEG, PNG and HEIF shims.
#ifndef PD_WEBP_H
#define PD_WEBP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Status codes returned by every pd_webp function.
enum {
    PD_WEBP_OK = 0,
    PD_WEBP_ERR_OPEN = 1,         ///< the file could not be opened or read
    PD_WEBP_ERR_DECODE = 2,       ///< libwebp rejected the data (corrupt, truncated)
    PD_WEBP_ERR_STATE = 3,        ///< the shim was called out of order
    PD_WEBP_ERR_ARGUMENT = 4,     ///< a bad argument (scale, buffer size)
    PD_WEBP_ERR_NOMEM = 5,        ///< an allocation failed
    PD_WEBP_ERR_UNSUPPORTED = 6,  ///< a WebP feature PhotoDrain does not decode (animation)
};

/// An open decoder: the whole file in memory with its features read.
typedef struct pd_webp_decoder pd_webp_decoder;

/// What the bitstream's header says.
typedef struct pd_webp_header {
    int width;
    int height;
    int has_alpha;
    int has_animation;
    int lossless;           ///< 1 for VP8L, 0 for VP8 (lossy) or mixed
} pd_webp_header;

/// Reads the file at `path` into memory (libwebp decodes from a buffer) and its header.
pd_webp_decoder *pd_webp_open_file(const char *path, int *status, char *err, size_t err_len);

/// Same for a buffer in memory; the buffer must outlive the decoder (it is not copied).
pd_webp_decoder *pd_webp_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len);

/// The header read by open.
pd_webp_header pd_webp_get_header(const pd_webp_decoder *dec);

/// Decodes into `out` (rows `stride` bytes apart) at out_width x out_height, scaled by libwebp's
/// own area-averaging rescaler when smaller than the image: gray (gray = 1) is the Y plane of a
/// YUV decode stretched from studio swing (16..235) to full range, RGB (gray = 0) drops any
/// alpha. Call once.
int pd_webp_decode(pd_webp_decoder *dec, int gray, int out_width, int out_height,
                   uint8_t *out, size_t stride, size_t out_len, char *err, size_t err_len);

/// Frees the decoder and the bytes it read. Safe on NULL.
void pd_webp_close(pd_webp_decoder *dec);

#ifdef __cplusplus
}
#endif
#endif
