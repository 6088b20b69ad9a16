// pd_heif: a small C shim over libheif for PhotoDrain.
//
// libheif reports errors as returned structs, not by longjmp, but its messages point into memory
// the library owns and its handles must be released in the right order. Every function here copies
// the message into the caller's buffer and releases what it took, so Swift sees a status and a
// message and one opaque decoder, as with the JPEG and PNG shims.
#ifndef PD_HEIF_H
#define PD_HEIF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Status codes returned by every pd_heif function.
enum {
    PD_HEIF_OK = 0,
    PD_HEIF_ERR_OPEN = 1,         ///< the file could not be opened
    PD_HEIF_ERR_DECODE = 2,       ///< libheif or its codec rejected the data (corrupt, truncated)
    PD_HEIF_ERR_STATE = 3,        ///< the shim was called out of order
    PD_HEIF_ERR_ARGUMENT = 4,     ///< a bad argument (scale, buffer size)
    PD_HEIF_ERR_NOMEM = 5,        ///< an allocation failed
    PD_HEIF_ERR_UNSUPPORTED = 6,  ///< a HEIF file libheif cannot decode (a codec or feature it lacks)
    PD_HEIF_ERR_LIMIT = 7,        ///< libheif's own security limits refused the file
};

/// An open decoder: a HEIF file or memory buffer with its primary image's handle.
typedef struct pd_heif_decoder pd_heif_decoder;

/// What the file's boxes say about the primary image.
typedef struct pd_heif_header {
    int width;              ///< width once irot/imir/clap are applied (as it displays)
    int height;             ///< height once irot/imir/clap are applied
    int coded_width;        ///< width as coded ('ispe'), before any transformation
    int coded_height;       ///< height as coded ('ispe')
    int luma_bits;          ///< bits per luma sample (8, 10, 12), -1 when unknown
    int has_alpha;          ///< 1 when an alpha plane is attached
    int thumbnail_width;    ///< the largest thumbnail's width after its transformations, 0 if none
    int thumbnail_height;   ///< the largest thumbnail's height, 0 if none
} pd_heif_header;

/// Opens `path` and reads its boxes (no pixels). NULL on failure, with status and message.
pd_heif_decoder *pd_heif_open_file(const char *path, int *status, char *err, size_t err_len);

/// Same for a buffer in memory; the buffer must outlive the decoder (it is not copied).
pd_heif_decoder *pd_heif_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len);

/// The header read by open.
pd_heif_header pd_heif_get_header(const pd_heif_decoder *dec);

/// Decodes the primary image (use_thumbnail = 0) or its largest thumbnail (1), to gray (gray = 1,
/// the codec's own luma plane, no colour conversion) or RGB (gray = 0), with irot/imir/clap
/// applied unless ignore_transformations is 1. Reports the size pd_heif_read will write: the
/// decoded size divided by scale_denom (1, 2, 4 or 8), rounded up. Call once, before pd_heif_read.
int pd_heif_start(pd_heif_decoder *dec, int use_thumbnail, int scale_denom, int gray,
                  int ignore_transformations, int *out_width, int *out_height, int *out_components,
                  char *err, size_t err_len);

/// Writes the decoded image into `out` (rows `stride` bytes apart), each output pixel the mean of
/// its scale_denom x scale_denom block, then frees the full-size decoded image.
int pd_heif_read(pd_heif_decoder *dec, uint8_t *out, size_t stride, size_t out_len, char *err, size_t err_len);

/// Frees the decoder and everything it holds. Safe on NULL.
void pd_heif_close(pd_heif_decoder *dec);

// Copies the primary image's first EXIF metadata block, from its TIFF header on (libheif's
// 4-byte offset prefix skipped), into a buffer of at most `cap` bytes at `out`. Returns the number
// of bytes copied, 0 when the image has no EXIF block, or -1 when the block is malformed or
// larger than `cap`.
long pd_heif_exif(const pd_heif_decoder *dec, uint8_t *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
