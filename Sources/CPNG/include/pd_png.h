// pd_png: a small C shim over libpng for PhotoDrain.
//
// libpng reports errors by longjmp to the point set in png_jmpbuf. Every function here sets that
// point in its own frame, so a corrupt or hostile file comes back as a status and a message.
#ifndef PD_PNG_H
#define PD_PNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PD_PNG_OK = 0,
    PD_PNG_ERR_OPEN = 1,      ///< the file could not be opened
    PD_PNG_ERR_DECODE = 2,    ///< libpng rejected the data
    PD_PNG_ERR_STATE = 3,     ///< called out of order
    PD_PNG_ERR_ARGUMENT = 4,  ///< a bad argument
    PD_PNG_ERR_NOMEM = 5,     ///< an allocation failed
};

typedef struct pd_png_decoder pd_png_decoder;

/// What the header (IHDR and the chunks before IDAT) says.
typedef struct pd_png_header {
    uint32_t width;
    uint32_t height;
    int bit_depth;      ///< 1, 2, 4, 8 or 16
    int color_type;     ///< PNG colour type: 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA
    int interlaced;     ///< 1 for Adam7
} pd_png_header;

/// Opens `path` and reads the chunks up to the image data. NULL on failure, with status and message.
pd_png_decoder *pd_png_open_file(const char *path, int *status, char *err, size_t err_len);

/// Same for a buffer in memory; the buffer must outlive the decoder.
pd_png_decoder *pd_png_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len);

pd_png_header pd_png_get_header(const pd_png_decoder *dec);

/// The eXIf chunk's TIFF data (no "Exif\0\0" prefix), or NULL. Valid while `dec` lives.
const uint8_t *pd_png_exif(const pd_png_decoder *dec, size_t *len);

/// Decodes the whole image to 8-bit gray (gray = 1) or RGB (gray = 0), alpha dropped, into `out`
/// with rows `stride` bytes apart. Gray from colour uses the BT.601 luma weights JPEG uses.
int pd_png_read(pd_png_decoder *dec, int gray, uint8_t *out, size_t stride, size_t out_len,
                char *err, size_t err_len);

void pd_png_close(pd_png_decoder *dec);

/// Encodes 8-bit gray (1), RGB (3) or RGBA (4) pixels as a PNG file at `path`.
int pd_png_write_file(const char *path, const uint8_t *pixels, uint32_t width, uint32_t height,
                      int components, size_t stride, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
