// pd_png.c: libpng behind setjmp, so libpng's errors become status codes.
#include "pd_png.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>

struct pd_png_decoder {
    png_structp png;
    png_infop info;
    FILE *file;
    const uint8_t *data;
    size_t len;
    size_t pos;
    int done;
    char message[256];
    pd_png_header header;
};

static void set_err(char *err, size_t err_len, const char *msg) {
    if (err && err_len > 0) snprintf(err, err_len, "%s", msg);
}

static void pd_png_error(png_structp png, png_const_charp msg) {
    pd_png_decoder *dec = (pd_png_decoder *)png_get_error_ptr(png);
    if (dec) snprintf(dec->message, sizeof(dec->message), "%s", msg);
    png_longjmp(png, 1);
}

static void pd_png_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

static void pd_png_read_memory(png_structp png, png_bytep out, png_size_t count) {
    pd_png_decoder *dec = (pd_png_decoder *)png_get_io_ptr(png);
    if (count > dec->len - dec->pos) {
        png_error(png, "unexpected end of file");
    }
    memcpy(out, dec->data + dec->pos, count);
    dec->pos += count;
}

static pd_png_decoder *open_common(FILE *file, const uint8_t *data, size_t len,
                                   int *status, char *err, size_t err_len) {
    pd_png_decoder *dec = calloc(1, sizeof(*dec));
    if (!dec) {
        if (file) fclose(file);
        *status = PD_PNG_ERR_NOMEM;
        set_err(err, err_len, "out of memory");
        return NULL;
    }
    dec->file = file;
    dec->data = data;
    dec->len = len;
    dec->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, dec, pd_png_error, pd_png_warning);
    dec->info = dec->png ? png_create_info_struct(dec->png) : NULL;
    if (!dec->png || !dec->info) {
        png_destroy_read_struct(dec->png ? &dec->png : NULL, NULL, NULL);
        if (file) fclose(file);
        free(dec);
        *status = PD_PNG_ERR_NOMEM;
        set_err(err, err_len, "out of memory");
        return NULL;
    }
    if (setjmp(png_jmpbuf(dec->png))) {
        *status = PD_PNG_ERR_DECODE;
        set_err(err, err_len, dec->message[0] ? dec->message : "invalid PNG data");
        png_destroy_read_struct(&dec->png, &dec->info, NULL);
        if (dec->file) fclose(dec->file);
        free(dec);
        return NULL;
    }
    // Bombs are refused by the caller from the header before any pixel buffer exists; these
    // limits only keep libpng's own ancillary-chunk allocations bounded.
    png_set_user_limits(dec->png, 0x7fffffff, 0x7fffffff);
    png_set_chunk_cache_max(dec->png, 1000);
    png_set_chunk_malloc_max(dec->png, 8u << 20);
    if (file) {
        png_init_io(dec->png, file);
    } else {
        png_set_read_fn(dec->png, dec, pd_png_read_memory);
    }
    png_read_info(dec->png, dec->info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0, interlace = 0;
    png_get_IHDR(dec->png, dec->info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    dec->header.width = w;
    dec->header.height = h;
    dec->header.bit_depth = depth;
    dec->header.color_type = ctype;
    dec->header.interlaced = interlace != PNG_INTERLACE_NONE;
    *status = PD_PNG_OK;
    return dec;
}

pd_png_decoder *pd_png_open_file(const char *path, int *status, char *err, size_t err_len) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        *status = PD_PNG_ERR_OPEN;
        set_err(err, err_len, strerror(errno));
        return NULL;
    }
    return open_common(file, NULL, 0, status, err, err_len);
}

pd_png_decoder *pd_png_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len) {
    if (!data || len == 0) {
        *status = PD_PNG_ERR_DECODE;
        set_err(err, err_len, "empty input");
        return NULL;
    }
    return open_common(NULL, data, len, status, err, err_len);
}

pd_png_header pd_png_get_header(const pd_png_decoder *dec) { return dec->header; }

const uint8_t *pd_png_exif(const pd_png_decoder *dec, size_t *len) {
#ifdef PNG_eXIf_SUPPORTED
    png_bytep exif = NULL;
    png_uint_32 n = 0;
    if (png_get_eXIf_1(dec->png, dec->info, &n, &exif) && exif && n > 0) {
        *len = n;
        return exif;
    }
#endif
    *len = 0;
    return NULL;
}

int pd_png_read(pd_png_decoder *dec, int gray, uint8_t *out, size_t stride, size_t out_len,
                char *err, size_t err_len) {
    if (dec->done) {
        set_err(err, err_len, "image already read");
        return PD_PNG_ERR_STATE;
    }
    size_t comps = gray ? 1 : 3;
    size_t row_bytes = (size_t)dec->header.width * comps;
    if (stride < row_bytes || dec->header.height == 0 ||
        out_len < stride * (dec->header.height - 1) + row_bytes) {
        set_err(err, err_len, "output buffer too small");
        return PD_PNG_ERR_ARGUMENT;
    }
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(dec->png))) {
        free(rows);
        set_err(err, err_len, dec->message[0] ? dec->message : "invalid PNG data");
        return PD_PNG_ERR_DECODE;
    }
    png_structp png = dec->png;
    int ctype = dec->header.color_type;
    // Every colour type and depth to 8 bits per channel, alpha dropped.
    if (dec->header.bit_depth == 16) png_set_scale_16(png);
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && dec->header.bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (ctype & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
    // tRNS only adds alpha, which is dropped anyway: leave it unexpanded.
    int is_color = (ctype & PNG_COLOR_MASK_COLOR) != 0;
    if (gray && is_color) {
        // BT.601 weights (0.299, 0.587) in 1/100000 units: the luma JPEG stores.
        png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);
    } else if (!gray && !is_color) {
        png_set_gray_to_rgb(png);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, dec->info);
    if (png_get_rowbytes(png, dec->info) != row_bytes) {
        png_error(png, "unexpected row size after transformations");
    }
    rows = malloc(sizeof(png_bytep) * dec->header.height);
    if (!rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < dec->header.height; y++) rows[y] = out + (size_t)y * stride;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    free(rows);
    dec->done = 1;
    return PD_PNG_OK;
}

void pd_png_close(pd_png_decoder *dec) {
    if (!dec) return;
    png_destroy_read_struct(&dec->png, &dec->info, NULL);
    if (dec->file) fclose(dec->file);
    free(dec);
}

int pd_png_write_file(const char *path, const uint8_t *pixels, uint32_t width, uint32_t height,
                      int components, size_t stride, char *err, size_t err_len) {
    if (width == 0 || height == 0 || (components != 1 && components != 3 && components != 4) ||
        stride < (size_t)width * (size_t)components) {
        set_err(err, err_len, "bad image geometry");
        return PD_PNG_ERR_ARGUMENT;
    }
    FILE *file = fopen(path, "wb");
    if (!file) {
        set_err(err, err_len, strerror(errno));
        return PD_PNG_ERR_OPEN;
    }
    pd_png_decoder holder;  // only for the error message buffer
    memset(&holder, 0, sizeof(holder));
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &holder, pd_png_error, pd_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        fclose(file);
        set_err(err, err_len, "out of memory");
        return PD_PNG_ERR_NOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(file);
        set_err(err, err_len, holder.message[0] ? holder.message : "PNG write failed");
        return PD_PNG_ERR_DECODE;
    }
    png_init_io(png, file);
    int ctype = components == 1 ? PNG_COLOR_TYPE_GRAY : (components == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA);
    png_set_IHDR(png, info, width, height, 8, ctype, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) {
        png_write_row(png, (png_const_bytep)(pixels + (size_t)y * stride));
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(file) != 0) {
        set_err(err, err_len, strerror(errno));
        return PD_PNG_ERR_OPEN;
    }
    return PD_PNG_OK;
}
