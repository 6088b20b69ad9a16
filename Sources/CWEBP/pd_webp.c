// pd_webp.c: libwebp's advanced decoding API behind status codes.
#include "pd_webp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>

struct pd_webp_decoder {
    uint8_t *owned;         // the file's bytes, when read from a file
    const uint8_t *data;
    size_t len;
    int finished;
    pd_webp_header header;
};

static void set_err(char *err, size_t err_len, const char *msg) {
    if (err && err_len > 0) {
        snprintf(err, err_len, "%s", msg);
    }
}

static int status_for(VP8StatusCode code, char *err, size_t err_len) {
    switch (code) {
    case VP8_STATUS_OK: return PD_WEBP_OK;
    case VP8_STATUS_OUT_OF_MEMORY: set_err(err, err_len, "out of memory"); return PD_WEBP_ERR_NOMEM;
    case VP8_STATUS_INVALID_PARAM: set_err(err, err_len, "invalid decoding parameters"); return PD_WEBP_ERR_ARGUMENT;
    case VP8_STATUS_UNSUPPORTED_FEATURE: set_err(err, err_len, "unsupported WebP feature"); return PD_WEBP_ERR_UNSUPPORTED;
    case VP8_STATUS_NOT_ENOUGH_DATA: set_err(err, err_len, "not enough data: the file is truncated"); return PD_WEBP_ERR_DECODE;
    case VP8_STATUS_BITSTREAM_ERROR: set_err(err, err_len, "corrupt WebP bitstream"); return PD_WEBP_ERR_DECODE;
    default: set_err(err, err_len, "WebP decoding failed"); return PD_WEBP_ERR_DECODE;
    }
}

static pd_webp_decoder *open_common(uint8_t *owned, const uint8_t *data, size_t len,
                                    int *status, char *err, size_t err_len) {
    pd_webp_decoder *dec = calloc(1, sizeof(*dec));
    if (!dec) {
        free(owned);
        *status = PD_WEBP_ERR_NOMEM;
        set_err(err, err_len, "out of memory");
        return NULL;
    }
    dec->owned = owned;
    dec->data = data;
    dec->len = len;
    WebPBitstreamFeatures features;
    VP8StatusCode code = WebPGetFeatures(data, len, &features);
    if (code != VP8_STATUS_OK) {
        *status = status_for(code, err, err_len);
        pd_webp_close(dec);
        return NULL;
    }
    dec->header.width = features.width;
    dec->header.height = features.height;
    dec->header.has_alpha = features.has_alpha ? 1 : 0;
    dec->header.has_animation = features.has_animation ? 1 : 0;
    dec->header.lossless = features.format == 2 ? 1 : 0;
    *status = PD_WEBP_OK;
    return dec;
}

pd_webp_decoder *pd_webp_open_file(const char *path, int *status, char *err, size_t err_len) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        *status = PD_WEBP_ERR_OPEN;
        set_err(err, err_len, strerror(errno));
        return NULL;
    }
    long size = -1;
    if (fseek(file, 0, SEEK_END) == 0) size = ftell(file);
    if (size <= 0 || fseek(file, 0, SEEK_SET) != 0) {
        fclose(file);
        *status = size == 0 ? PD_WEBP_ERR_DECODE : PD_WEBP_ERR_OPEN;
        set_err(err, err_len, size == 0 ? "empty input" : "the file cannot be measured");
        return NULL;
    }
    uint8_t *bytes = malloc((size_t)size);
    if (!bytes) {
        fclose(file);
        *status = PD_WEBP_ERR_NOMEM;
        set_err(err, err_len, "out of memory");
        return NULL;
    }
    size_t got = fread(bytes, 1, (size_t)size, file);
    int read_error = ferror(file);
    fclose(file);
    if (read_error) {
        free(bytes);
        *status = PD_WEBP_ERR_OPEN;
        set_err(err, err_len, strerror(errno));
        return NULL;
    }
    return open_common(bytes, bytes, got, status, err, err_len);
}

pd_webp_decoder *pd_webp_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len) {
    if (!data || len == 0) {
        *status = PD_WEBP_ERR_DECODE;
        set_err(err, err_len, "empty input");
        return NULL;
    }
    return open_common(NULL, data, len, status, err, err_len);
}

pd_webp_header pd_webp_get_header(const pd_webp_decoder *dec) { return dec->header; }

int pd_webp_decode(pd_webp_decoder *dec, int gray, int out_width, int out_height,
                   uint8_t *out, size_t stride, size_t out_len, char *err, size_t err_len) {
    if (dec->finished) {
        set_err(err, err_len, "decoder already used");
        return PD_WEBP_ERR_STATE;
    }
    dec->finished = 1;
    if (dec->header.has_animation) {
        set_err(err, err_len, "animated WebP is not decoded");
        return PD_WEBP_ERR_UNSUPPORTED;
    }
    if (out_width <= 0 || out_height <= 0 || out_width > dec->header.width || out_height > dec->header.height) {
        set_err(err, err_len, "the output size must be within the image size");
        return PD_WEBP_ERR_ARGUMENT;
    }
    size_t row_bytes = (size_t)out_width * (gray ? 1u : 3u);
    if (stride < row_bytes || out_len < stride * (size_t)(out_height - 1) + row_bytes) {
        set_err(err, err_len, "output buffer too small");
        return PD_WEBP_ERR_ARGUMENT;
    }
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) {
        set_err(err, err_len, "libwebp version mismatch");
        return PD_WEBP_ERR_STATE;
    }
    if (out_width != dec->header.width || out_height != dec->header.height) {
        config.options.use_scaling = 1;
        config.options.scaled_width = out_width;
        config.options.scaled_height = out_height;
    }
    config.output.is_external_memory = 1;
    config.output.width = out_width;
    config.output.height = out_height;
    uint8_t *chroma = NULL;
    if (gray) {
        // 4:2:0 chroma planes are required by MODE_YUV; they are scratch, the Y plane is the output.
        size_t cw = (size_t)(out_width + 1) / 2, ch = (size_t)(out_height + 1) / 2;
        chroma = malloc(cw * ch * 2);
        if (!chroma) {
            set_err(err, err_len, "out of memory");
            return PD_WEBP_ERR_NOMEM;
        }
        config.output.colorspace = MODE_YUV;
        config.output.u.YUVA.y = out;
        config.output.u.YUVA.y_stride = (int)stride;
        config.output.u.YUVA.y_size = out_len;
        config.output.u.YUVA.u = chroma;
        config.output.u.YUVA.v = chroma + cw * ch;
        config.output.u.YUVA.u_stride = (int)cw;
        config.output.u.YUVA.v_stride = (int)cw;
        config.output.u.YUVA.u_size = cw * ch;
        config.output.u.YUVA.v_size = cw * ch;
    } else {
        config.output.colorspace = MODE_RGB;
        config.output.u.RGBA.rgba = out;
        config.output.u.RGBA.stride = (int)stride;
        config.output.u.RGBA.size = out_len;
    }
    VP8StatusCode code = WebPDecode(dec->data, dec->len, &config);
    WebPFreeDecBuffer(&config.output);
    free(chroma);
    if (code == VP8_STATUS_OK && gray) {
        // WebP's Y is BT.601 studio swing (16..235), as VP8 codes it and as libwebp converts
        // lossless RGB to it: stretch it to full range, the luma JPEG, PNG and HEIF give.
        uint8_t full[256];
        for (int v = 0; v < 256; v++) {
            int f = ((v - 16) * 255 * 2 + 219) / (219 * 2);
            full[v] = (uint8_t)(v <= 16 ? 0 : (f > 255 ? 255 : f));
        }
        for (int y = 0; y < out_height; y++) {
            uint8_t *row = out + (size_t)y * stride;
            for (int x = 0; x < out_width; x++) row[x] = full[row[x]];
        }
    }
    return status_for(code, err, err_len);
}

void pd_webp_close(pd_webp_decoder *dec) {
    if (!dec) return;
    free(dec->owned);
    free(dec);
}
