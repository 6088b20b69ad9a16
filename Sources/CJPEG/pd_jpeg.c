// pd_jpeg.c: libjpeg-turbo behind setjmp, so libjpeg's errors become status codes.
#include "pd_jpeg.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

struct pd_error_mgr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

struct pd_jpeg_decoder {
    struct jpeg_decompress_struct cinfo;
    struct pd_error_mgr jerr;
    FILE *file;
    int started;   // jpeg_start_decompress has run
    int finished;  // all scanlines read
    pd_jpeg_header header;
};

static void pd_error_exit(j_common_ptr cinfo) {
    struct pd_error_mgr *mgr = (struct pd_error_mgr *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, mgr->message);
    longjmp(mgr->jump, 1);
}

// Warnings (corrupt data that libjpeg can recover from) are not fatal, but libjpeg's default
// prints them to stderr. Keep quiet; a recovered warning is still counted in num_warnings.
static void pd_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void set_err(char *err, size_t err_len, const char *msg) {
    if (err && err_len > 0) {
        snprintf(err, err_len, "%s", msg);
    }
}

static pd_jpeg_decoder *open_common(FILE *file, const uint8_t *data, size_t len,
                                    int *status, char *err, size_t err_len) {
    pd_jpeg_decoder *dec = calloc(1, sizeof(*dec));
    if (!dec) {
        if (file) fclose(file);
        *status = PD_JPEG_ERR_NOMEM;
        set_err(err, err_len, "out of memory");
        return NULL;
    }
    dec->file = file;
    dec->cinfo.err = jpeg_std_error(&dec->jerr.pub);
    dec->jerr.pub.error_exit = pd_error_exit;
    dec->jerr.pub.output_message = pd_output_message;
    if (setjmp(dec->jerr.jump)) {
        *status = PD_JPEG_ERR_DECODE;
        set_err(err, err_len, dec->jerr.message);
        jpeg_destroy_decompress(&dec->cinfo);
        if (dec->file) fclose(dec->file);
        free(dec);
        return NULL;
    }
    jpeg_create_decompress(&dec->cinfo);
    if (file) {
        jpeg_stdio_src(&dec->cinfo, file);
    } else {
        jpeg_mem_src(&dec->cinfo, data, (unsigned long)len);
    }
    jpeg_save_markers(&dec->cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&dec->cinfo, TRUE);
    dec->header.width = (int)dec->cinfo.image_width;
    dec->header.height = (int)dec->cinfo.image_height;
    dec->header.components = dec->cinfo.num_components;
    dec->header.color_space = (int)dec->cinfo.jpeg_color_space;
    dec->header.progressive = dec->cinfo.progressive_mode ? 1 : 0;
    *status = PD_JPEG_OK;
    return dec;
}

pd_jpeg_decoder *pd_jpeg_open_file(const char *path, int *status, char *err, size_t err_len) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        *status = PD_JPEG_ERR_OPEN;
        set_err(err, err_len, strerror(errno));
        return NULL;
    }
    return open_common(file, NULL, 0, status, err, err_len);
}

pd_jpeg_decoder *pd_jpeg_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len) {
    if (!data || len == 0) {
        *status = PD_JPEG_ERR_DECODE;
        set_err(err, err_len, "empty input");
        return NULL;
    }
    return open_common(NULL, data, len, status, err, err_len);
}

pd_jpeg_header pd_jpeg_get_header(const pd_jpeg_decoder *dec) { return dec->header; }

const uint8_t *pd_jpeg_exif(const pd_jpeg_decoder *dec, size_t *len) {
    for (jpeg_saved_marker_ptr m = dec->cinfo.marker_list; m; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && memcmp(m->data, "Exif\0\0", 6) == 0) {
            *len = m->data_length;
            return m->data;
        }
    }
    *len = 0;
    return NULL;
}

int pd_jpeg_start(pd_jpeg_decoder *dec, int scale_denom, int gray,
                  int *out_width, int *out_height, int *out_components, char *err, size_t err_len) {
    if (dec->started) {
        set_err(err, err_len, "decoder already started");
        return PD_JPEG_ERR_STATE;
    }
    if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
        set_err(err, err_len, "scale denominator must be 1, 2, 4 or 8");
        return PD_JPEG_ERR_ARGUMENT;
    }
    if (setjmp(dec->jerr.jump)) {
        set_err(err, err_len, dec->jerr.message);
        return PD_JPEG_ERR_DECODE;
    }
    dec->cinfo.scale_num = 1;
    dec->cinfo.scale_denom = (unsigned int)scale_denom;
    if (gray) {
        // A YCbCr or gray file gives its luma straight; CMYK/YCCK cannot go to gray in libjpeg.
        J_COLOR_SPACE cs = dec->cinfo.jpeg_color_space;
        dec->cinfo.out_color_space = (cs == JCS_CMYK || cs == JCS_YCCK) ? JCS_CMYK : JCS_GRAYSCALE;
    } else {
        J_COLOR_SPACE cs = dec->cinfo.jpeg_color_space;
        dec->cinfo.out_color_space = (cs == JCS_CMYK || cs == JCS_YCCK) ? JCS_CMYK : JCS_RGB;
    }
    dec->cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&dec->cinfo);
    dec->started = 1;
    *out_width = (int)dec->cinfo.output_width;
    *out_height = (int)dec->cinfo.output_height;
    *out_components = dec->cinfo.output_components;
    return PD_JPEG_OK;
}

int pd_jpeg_read(pd_jpeg_decoder *dec, uint8_t *out, size_t stride, size_t out_len, char *err, size_t err_len) {
    if (!dec->started || dec->finished) {
        set_err(err, err_len, "decoder not started");
        return PD_JPEG_ERR_STATE;
    }
    size_t row_bytes = (size_t)dec->cinfo.output_width * (size_t)dec->cinfo.output_components;
    if (stride < row_bytes || out_len < stride * (dec->cinfo.output_height - 1) + row_bytes) {
        set_err(err, err_len, "output buffer too small");
        return PD_JPEG_ERR_ARGUMENT;
    }
    if (setjmp(dec->jerr.jump)) {
        set_err(err, err_len, dec->jerr.message);
        return PD_JPEG_ERR_DECODE;
    }
    while (dec->cinfo.output_scanline < dec->cinfo.output_height) {
        JSAMPROW rows[4];
        JDIMENSION n = 0;
        for (; n < 4 && dec->cinfo.output_scanline + n < dec->cinfo.output_height; n++) {
            rows[n] = out + (size_t)(dec->cinfo.output_scanline + n) * stride;
        }
        JDIMENSION got = jpeg_read_scanlines(&dec->cinfo, rows, n);
        if (got == 0) {
            set_err(err, err_len, "decoder made no progress");
            return PD_JPEG_ERR_DECODE;
        }
    }
    // A truncated file is "recovered" by libjpeg with a warning and gray fill; for PhotoDrain a
    // premature end is an error for that file, so the verdict never rests on invented pixels.
    if (dec->jerr.pub.num_warnings > 0) {
        char msg[JMSG_LENGTH_MAX];
        (*dec->jerr.pub.format_message)((j_common_ptr)&dec->cinfo, msg);
        set_err(err, err_len, msg);
        return PD_JPEG_ERR_DECODE;
    }
    jpeg_finish_decompress(&dec->cinfo);
    dec->finished = 1;
    return PD_JPEG_OK;
}

void pd_jpeg_close(pd_jpeg_decoder *dec) {
    if (!dec) return;
    // jpeg_destroy never calls error_exit, so it needs no setjmp.
    jpeg_destroy_decompress(&dec->cinfo);
    if (dec->file) fclose(dec->file);
    free(dec);
}

int pd_jpeg_encode(const uint8_t *pixels, int width, int height, int components, size_t stride,
                   int quality, uint8_t **out, size_t *out_len, char *err, size_t err_len) {
    if (width <= 0 || height <= 0 || (components != 1 && components != 3) ||
        stride < (size_t)width * (size_t)components) {
        set_err(err, err_len, "bad image geometry");
        return PD_JPEG_ERR_ARGUMENT;
    }
    struct jpeg_compress_struct cinfo;
    struct pd_error_mgr jerr;
    // volatile: they are changed after setjmp and read after a longjmp.
    unsigned char *volatile buffer = NULL;
    volatile unsigned long size = 0;
    memset(&cinfo, 0, sizeof(cinfo));
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = pd_error_exit;
    jerr.pub.output_message = pd_output_message;
    if (setjmp(jerr.jump)) {
        set_err(err, err_len, jerr.message);
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        return PD_JPEG_ERR_DECODE;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, (unsigned char **)&buffer, (unsigned long *)&size);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = components;
    cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality < 1 ? 1 : (quality > 100 ? 100 : quality), TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * stride);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *out = buffer;
    *out_len = size;
    return PD_JPEG_OK;
}

void pd_jpeg_free(void *p) { free(p); }
