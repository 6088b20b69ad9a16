// pd_jpeg: a small C shim over libjpeg-turbo for PhotoDrain.
//
// libjpeg reports errors through error_exit(), whose default calls exit(). Every function here
// installs its own handler and a setjmp point in its own frame, so a corrupt, truncated or hostile
// file comes back as a status code and a message, never as a dead process.
#ifndef PD_JPEG_H
#define PD_JPEG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Status codes returned by every pd_jpeg function.
enum {
    PD_JPEG_OK = 0,
    PD_JPEG_ERR_OPEN = 1,        ///< the file could not be opened (errno is kept in the message)
    PD_JPEG_ERR_DECODE = 2,      ///< libjpeg rejected the data (corrupt, truncated, unsupported)
    PD_JPEG_ERR_STATE = 3,       ///< the shim was called out of order
    PD_JPEG_ERR_ARGUMENT = 4,    ///< a bad argument (scale, buffer size)
    PD_JPEG_ERR_NOMEM = 5,       ///< an allocation failed
};

/// An open decoder: a file or memory buffer with its header read.
typedef struct pd_jpeg_decoder pd_jpeg_decoder;

/// What the header says.
typedef struct pd_jpeg_header {
    int width;              ///< image width in pixels
    int height;             ///< image height in pixels
    int components;         ///< colour components in the file (1 gray, 3 YCbCr, 4 CMYK/YCCK)
    int color_space;        ///< libjpeg's J_COLOR_SPACE of the file
    int progressive;        ///< 1 when the file is progressive
} pd_jpeg_header;

/// Opens `path` and reads its header (keeping the APP1 markers for EXIF).
/// On failure returns NULL and writes the status to *status and a message to `err`.
pd_jpeg_decoder *pd_jpeg_open_file(const char *path, int *status, char *err, size_t err_len);

/// Same as pd_jpeg_open_file for a buffer in memory; the buffer must outlive the decoder.
pd_jpeg_decoder *pd_jpeg_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len);

/// The header read by open.
pd_jpeg_header pd_jpeg_get_header(const pd_jpeg_decoder *dec);

/// The first APP1 marker that holds EXIF ("Exif\0\0" + TIFF), or NULL. Valid while `dec` lives.
const uint8_t *pd_jpeg_exif(const pd_jpeg_decoder *dec, size_t *len);

/// Chooses the output: scale 1/denom (denom 1, 2, 4 or 8), gray (1) or RGB (0), and reports the
/// output size libjpeg will produce. Must be called once, before pd_jpeg_read.
int pd_jpeg_start(pd_jpeg_decoder *dec, int scale_denom, int gray,
                  int *out_width, int *out_height, int *out_components, char *err, size_t err_len);

/// Decodes every scanline into `out` (rows `stride` bytes apart, at least width*components each).
int pd_jpeg_read(pd_jpeg_decoder *dec, uint8_t *out, size_t stride, size_t out_len, char *err, size_t err_len);

/// Frees the decoder and closes its file. Safe on NULL.
void pd_jpeg_close(pd_jpeg_decoder *dec);

/// Encodes an 8-bit gray (components 1) or RGB (components 3) buffer as a baseline JPEG.
/// On success *out is a malloc'd buffer the caller frees with pd_jpeg_free.
int pd_jpeg_encode(const uint8_t *pixels, int width, int height, int components, size_t stride,
                   int quality, uint8_t **out, size_t *out_len, char *err, size_t err_len);

/// Frees a buffer returned by pd_jpeg_encode.
void pd_jpeg_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
