// pd_heif.c: libheif behind status codes, so its errors and handles never leak into Swift.
#include "pd_heif.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libheif/heif.h>

// libheif is opened on the first HEIF file, not linked: linked, it and the codecs it needs (x265,
// libde265, aom, dav1d) are loaded and relocated at every start, about 2 MB resident in each
// `upload`, `serve` or `--help` that never decodes a photo. Every libheif function this file calls
// is in this list and resolved from the library once; the names below then stand for the pointers.
#define PD_HEIF_FUNCTIONS(X) \
    X(heif_init) \
    X(heif_context_alloc) \
    X(heif_context_free) \
    X(heif_context_set_max_decoding_threads) \
    X(heif_context_read_from_file) \
    X(heif_context_read_from_memory_without_copy) \
    X(heif_context_get_primary_image_handle) \
    X(heif_image_handle_release) \
    X(heif_image_handle_get_width) \
    X(heif_image_handle_get_height) \
    X(heif_image_handle_get_ispe_width) \
    X(heif_image_handle_get_ispe_height) \
    X(heif_image_handle_get_luma_bits_per_pixel) \
    X(heif_image_handle_has_alpha_channel) \
    X(heif_image_handle_get_number_of_thumbnails) \
    X(heif_image_handle_get_list_of_thumbnail_IDs) \
    X(heif_image_handle_get_thumbnail) \
    X(heif_image_handle_get_list_of_metadata_block_IDs) \
    X(heif_image_handle_get_metadata_size) \
    X(heif_image_handle_get_metadata) \
    X(heif_decoding_options_alloc) \
    X(heif_decoding_options_free) \
    X(heif_decode_image) \
    X(heif_image_release) \
    X(heif_image_get_decoding_warnings) \
    X(heif_image_get_width) \
    X(heif_image_get_height) \
    X(heif_image_get_plane_readonly) \
    X(heif_image_get_bits_per_pixel_range)

#define PD_HEIF_POINTER(name) static __typeof__(&name) pd_##name;
PD_HEIF_FUNCTIONS(PD_HEIF_POINTER)
#undef PD_HEIF_POINTER
#define heif_init pd_heif_init
#define heif_context_alloc pd_heif_context_alloc
#define heif_context_free pd_heif_context_free
#define heif_context_set_max_decoding_threads pd_heif_context_set_max_decoding_threads
#define heif_context_read_from_file pd_heif_context_read_from_file
#define heif_context_read_from_memory_without_copy pd_heif_context_read_from_memory_without_copy
#define heif_context_get_primary_image_handle pd_heif_context_get_primary_image_handle
#define heif_image_handle_release pd_heif_image_handle_release
#define heif_image_handle_get_width pd_heif_image_handle_get_width
#define heif_image_handle_get_height pd_heif_image_handle_get_height
#define heif_image_handle_get_ispe_width pd_heif_image_handle_get_ispe_width
#define heif_image_handle_get_ispe_height pd_heif_image_handle_get_ispe_height
#define heif_image_handle_get_luma_bits_per_pixel pd_heif_image_handle_get_luma_bits_per_pixel
#define heif_image_handle_has_alpha_channel pd_heif_image_handle_has_alpha_channel
#define heif_image_handle_get_number_of_thumbnails pd_heif_image_handle_get_number_of_thumbnails
#define heif_image_handle_get_list_of_thumbnail_IDs pd_heif_image_handle_get_list_of_thumbnail_IDs
#define heif_image_handle_get_thumbnail pd_heif_image_handle_get_thumbnail
#define heif_image_handle_get_list_of_metadata_block_IDs pd_heif_image_handle_get_list_of_metadata_block_IDs
#define heif_image_handle_get_metadata_size pd_heif_image_handle_get_metadata_size
#define heif_image_handle_get_metadata pd_heif_image_handle_get_metadata
#define heif_decoding_options_alloc pd_heif_decoding_options_alloc
#define heif_decoding_options_free pd_heif_decoding_options_free
#define heif_decode_image pd_heif_decode_image
#define heif_image_release pd_heif_image_release
#define heif_image_get_decoding_warnings pd_heif_image_get_decoding_warnings
#define heif_image_get_width pd_heif_image_get_width
#define heif_image_get_height pd_heif_image_get_height
#define heif_image_get_plane_readonly pd_heif_image_get_plane_readonly
#define heif_image_get_bits_per_pixel_range pd_heif_image_get_bits_per_pixel_range

struct pd_heif_decoder {
    struct heif_context *ctx;
    struct heif_image_handle *primary;
    struct heif_image_handle *thumbnail;  // the largest thumbnail, or NULL
    struct heif_image *image;             // decoded by pd_heif_start, freed by pd_heif_read
    int gray;
    int scale_denom;
    int out_width;
    int out_height;
    int started;
    int finished;
    pd_heif_header header;
};

static void set_err(char *err, size_t err_len, const char *msg) {
    if (err && err_len > 0) {
        snprintf(err, err_len, "%s", msg);
    }
}

// libheif's messages are always set; its suberror says more (e.g. "End of data") than the main one.
static void set_heif_err(char *err, size_t err_len, struct heif_error e) {
    if (err && err_len > 0) {
        snprintf(err, err_len, "%s", e.message ? e.message : "libheif error");
    }
}

static int status_for(struct heif_error e) {
    if (e.subcode == heif_suberror_Security_limit_exceeded) return PD_HEIF_ERR_LIMIT;
    switch (e.code) {
    case heif_error_Input_does_not_exist: return PD_HEIF_ERR_OPEN;
    case heif_error_Unsupported_filetype:
    case heif_error_Unsupported_feature: return PD_HEIF_ERR_UNSUPPORTED;
    case heif_error_Memory_allocation_error: return PD_HEIF_ERR_NOMEM;
    case heif_error_Usage_error: return PD_HEIF_ERR_ARGUMENT;
    default: return PD_HEIF_ERR_DECODE;
    }
}

// heif_init is reference counted and loads the codec plugins; PhotoDrain opens and initialises
// the library once for the life of the process and never deinitialises, so decoders on any thread
// share the plugins. `load_error` is set, once, when the library or one of its functions is missing.
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char load_error[256];

static void init_library(void) {
    void *library = dlopen("libheif.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        snprintf(load_error, sizeof(load_error), "libheif could not be loaded: %s", why ? why : "libheif.so.1");
        return;
    }
#define PD_HEIF_RESOLVE(name) \
    if (!(pd_##name = (__typeof__(pd_##name))dlsym(library, #name))) { \
        snprintf(load_error, sizeof(load_error), "libheif.so.1 lacks %s", #name); \
        return; \
    }
    PD_HEIF_FUNCTIONS(PD_HEIF_RESOLVE)
#undef PD_HEIF_RESOLVE
    (void)heif_init(NULL);
}

static void free_decoder(pd_heif_decoder *dec) {
    if (dec->image) heif_image_release(dec->image);
    if (dec->thumbnail) heif_image_handle_release(dec->thumbnail);
    if (dec->primary) heif_image_handle_release(dec->primary);
    if (dec->ctx) heif_context_free(dec->ctx);
    free(dec);
}

static void find_thumbnail(pd_heif_decoder *dec) {
    int count = heif_image_handle_get_number_of_thumbnails(dec->primary);
    if (count <= 0) return;
    if (count > 16) count = 16;
    heif_item_id ids[16];
    count = heif_image_handle_get_list_of_thumbnail_IDs(dec->primary, ids, count);
    long best_area = 0;
    for (int i = 0; i < count; i++) {
        struct heif_image_handle *thumb = NULL;
        struct heif_error e = heif_image_handle_get_thumbnail(dec->primary, ids[i], &thumb);
        if (e.code != heif_error_Ok || !thumb) continue;
        long w = heif_image_handle_get_width(thumb), h = heif_image_handle_get_height(thumb);
        if (w > 0 && h > 0 && w * h > best_area) {
            if (dec->thumbnail) heif_image_handle_release(dec->thumbnail);
            dec->thumbnail = thumb;
            best_area = w * h;
            dec->header.thumbnail_width = (int)w;
            dec->header.thumbnail_height = (int)h;
        } else {
            heif_image_handle_release(thumb);
        }
    }
}

static pd_heif_decoder *open_common(const char *path, const uint8_t *data, size_t len,
                                    int *status, char *err, size_t err_len) {
    pthread_once(&init_once, init_library);
    if (load_error[0]) {
        *status = PD_HEIF_ERR_UNSUPPORTED;
        set_err(err, err_len, load_error);
        return NULL;
    }
    pd_heif_decoder *dec = calloc(1, sizeof(*dec));
    if (!dec || !(dec->ctx = heif_context_alloc())) {
        free(dec);
        *status = PD_HEIF_ERR_NOMEM;
        set_err(err, err_len, "out of memory");
        return NULL;
    }
    // Decode grid tiles on the calling thread: PhotoDrain already runs one photo per slot.
    heif_context_set_max_decoding_threads(dec->ctx, 0);
    struct heif_error e = path ? heif_context_read_from_file(dec->ctx, path, NULL)
                               : heif_context_read_from_memory_without_copy(dec->ctx, data, len, NULL);
    if (e.code == heif_error_Ok) {
        e = heif_context_get_primary_image_handle(dec->ctx, &dec->primary);
    }
    if (e.code != heif_error_Ok) {
        *status = status_for(e);
        if (*status == PD_HEIF_ERR_OPEN && path) {
            // libheif says only "Input file does not exist" for every fopen failure; errno says which.
            set_err(err, err_len, errno ? strerror(errno) : e.message);
        } else {
            set_heif_err(err, err_len, e);
        }
        free_decoder(dec);
        return NULL;
    }
    dec->header.width = heif_image_handle_get_width(dec->primary);
    dec->header.height = heif_image_handle_get_height(dec->primary);
    dec->header.coded_width = heif_image_handle_get_ispe_width(dec->primary);
    dec->header.coded_height = heif_image_handle_get_ispe_height(dec->primary);
    dec->header.luma_bits = heif_image_handle_get_luma_bits_per_pixel(dec->primary);
    dec->header.has_alpha = heif_image_handle_has_alpha_channel(dec->primary) ? 1 : 0;
    find_thumbnail(dec);
    *status = PD_HEIF_OK;
    return dec;
}

pd_heif_decoder *pd_heif_open_file(const char *path, int *status, char *err, size_t err_len) {
    errno = 0;
    return open_common(path, NULL, 0, status, err, err_len);
}

pd_heif_decoder *pd_heif_open_memory(const uint8_t *data, size_t len, int *status, char *err, size_t err_len) {
    if (!data || len == 0) {
        *status = PD_HEIF_ERR_DECODE;
        set_err(err, err_len, "empty input");
        return NULL;
    }
    return open_common(NULL, data, len, status, err, err_len);
}

pd_heif_header pd_heif_get_header(const pd_heif_decoder *dec) { return dec->header; }

int pd_heif_start(pd_heif_decoder *dec, int use_thumbnail, int scale_denom, int gray,
                  int ignore_transformations, int *out_width, int *out_height, int *out_components,
                  char *err, size_t err_len) {
    if (dec->started) {
        set_err(err, err_len, "decoder already started");
        return PD_HEIF_ERR_STATE;
    }
    if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
        set_err(err, err_len, "scale denominator must be 1, 2, 4 or 8");
        return PD_HEIF_ERR_ARGUMENT;
    }
    if (use_thumbnail && !dec->thumbnail) {
        set_err(err, err_len, "the image has no thumbnail");
        return PD_HEIF_ERR_ARGUMENT;
    }
    dec->started = 1;
    struct heif_decoding_options *options = heif_decoding_options_alloc();
    if (!options) {
        set_err(err, err_len, "out of memory");
        return PD_HEIF_ERR_NOMEM;
    }
    // irot/imir/clap are HEIF's orientation; EXIF orientation is never applied on top of them.
    options->ignore_transformations = ignore_transformations ? 1 : 0;
    options->convert_hdr_to_8bit = 1;
    // A damaged stream is an error for that photo, not a picture patched with invented pixels.
    options->strict_decoding = 1;
    // Gray asks for the codec's own planes (4:2:0 YCbCr, as HEVC stores photos) and keeps only Y:
    // libheif 1.15 cannot convert YCbCr to monochrome, and the luma plane needs no conversion.
    struct heif_error e = gray
        ? heif_decode_image(use_thumbnail ? dec->thumbnail : dec->primary, &dec->image,
                            heif_colorspace_YCbCr, heif_chroma_420, options)
        : heif_decode_image(use_thumbnail ? dec->thumbnail : dec->primary, &dec->image,
                            heif_colorspace_RGB, heif_chroma_interleaved_RGB, options);
    heif_decoding_options_free(options);
    if (e.code != heif_error_Ok) {
        dec->image = NULL;
        set_heif_err(err, err_len, e);
        return status_for(e);
    }
    if (heif_image_get_decoding_warnings(dec->image, 0, NULL, 0) > 0) {
        struct heif_error warning;
        heif_image_get_decoding_warnings(dec->image, 0, &warning, 1);
        set_heif_err(err, err_len, warning);
        return PD_HEIF_ERR_DECODE;
    }
    enum heif_channel channel = gray ? heif_channel_Y : heif_channel_interleaved;
    int w = heif_image_get_width(dec->image, channel);
    int h = heif_image_get_height(dec->image, channel);
    if (w <= 0 || h <= 0) {
        set_err(err, err_len, "the decoded image has no pixels");
        return PD_HEIF_ERR_DECODE;
    }
    dec->gray = gray;
    dec->scale_denom = scale_denom;
    dec->out_width = (w + scale_denom - 1) / scale_denom;
    dec->out_height = (h + scale_denom - 1) / scale_denom;
    *out_width = dec->out_width;
    *out_height = dec->out_height;
    *out_components = gray ? 1 : 3;
    return PD_HEIF_OK;
}

// Box-averages `src` (w x h samples of `channels`, `bytes` = 1 or 2 per sample holding `bits`
// significant bits) by `denom` into 8-bit `out`; edge blocks average the pixels they have.
static void reduce(const uint8_t *src, int src_stride, int w, int h, int channels, int bytes, int bits,
                   int denom, uint8_t *out, size_t stride, int out_w, int out_h) {
    int shift = bits > 8 ? bits - 8 : 0;
    for (int oy = 0; oy < out_h; oy++) {
        int y0 = oy * denom, y1 = y0 + denom < h ? y0 + denom : h;
        uint8_t *dst = out + (size_t)oy * stride;
        for (int ox = 0; ox < out_w; ox++) {
            int x0 = ox * denom, x1 = x0 + denom < w ? x0 + denom : w;
            int count = (y1 - y0) * (x1 - x0);
            for (int c = 0; c < channels; c++) {
                unsigned sum = 0;
                for (int y = y0; y < y1; y++) {
                    const uint8_t *row = src + (size_t)y * (size_t)src_stride;
                    for (int x = x0; x < x1; x++) {
                        size_t i = (size_t)(x * channels + c);
                        unsigned v = bytes == 2 ? ((const uint16_t *)(const void *)row)[i] >> shift : row[i];
                        sum += v > 255 ? 255 : v;
                    }
                }
                dst[ox * channels + c] = (uint8_t)((sum + (unsigned)count / 2) / (unsigned)count);
            }
        }
    }
}

int pd_heif_read(pd_heif_decoder *dec, uint8_t *out, size_t stride, size_t out_len, char *err, size_t err_len) {
    if (!dec->started || dec->finished || !dec->image) {
        set_err(err, err_len, "decoder not started");
        return PD_HEIF_ERR_STATE;
    }
    int channels = dec->gray ? 1 : 3;
    size_t row_bytes = (size_t)dec->out_width * (size_t)channels;
    if (stride < row_bytes || out_len < stride * (size_t)(dec->out_height - 1) + row_bytes) {
        set_err(err, err_len, "output buffer too small");
        return PD_HEIF_ERR_ARGUMENT;
    }
    enum heif_channel channel = dec->gray ? heif_channel_Y : heif_channel_interleaved;
    int src_stride = 0;
    const uint8_t *src = heif_image_get_plane_readonly(dec->image, channel, &src_stride);
    int bits = heif_image_get_bits_per_pixel_range(dec->image, channel);
    if (!src || src_stride <= 0 || bits <= 0) {
        set_err(err, err_len, "the decoded image has no readable plane");
        return PD_HEIF_ERR_DECODE;
    }
    int w = heif_image_get_width(dec->image, channel);
    int h = heif_image_get_height(dec->image, channel);
    // convert_hdr_to_8bit turns 10- and 12-bit images to 8-bit, but only on conversion paths that
    // support it: high-bit-depth planes (16-bit storage) are scaled down here instead.
    int bytes = bits > 8 ? 2 : 1;
    if (dec->scale_denom == 1 && bytes == 1) {
        for (int y = 0; y < h; y++) {
            memcpy(out + (size_t)y * stride, src + (size_t)y * (size_t)src_stride, row_bytes);
        }
    } else {
        reduce(src, src_stride, w, h, channels, bytes, bits, dec->scale_denom, out, stride,
               dec->out_width, dec->out_height);
    }
    heif_image_release(dec->image);
    dec->image = NULL;
    dec->finished = 1;
    return PD_HEIF_OK;
}

void pd_heif_close(pd_heif_decoder *dec) {
    if (!dec) return;
    free_decoder(dec);
}

long pd_heif_exif(const pd_heif_decoder *dec, uint8_t *out, size_t cap) {
    if (!dec || !dec->primary || !out) return -1;
    heif_item_id id;
    if (heif_image_handle_get_list_of_metadata_block_IDs(dec->primary, "Exif", &id, 1) < 1) return 0;
    size_t size = heif_image_handle_get_metadata_size(dec->primary, id);
    if (size < 4 || size > (size_t)64 << 20) return -1;
    uint8_t *block = malloc(size);
    if (!block) return -1;
    struct heif_error e = heif_image_handle_get_metadata(dec->primary, id, block);
    if (e.code != heif_error_Ok) {
        free(block);
        return -1;
    }
    // ISO/IEC 23008-12 A.2.1: a 32-bit big-endian offset from the end of that field to the TIFF header.
    size_t skip = ((size_t)block[0] << 24) | ((size_t)block[1] << 16) | ((size_t)block[2] << 8) | (size_t)block[3];
    if (skip > size - 4 || size - 4 - skip > cap) {
        free(block);
        return -1;
    }
    size_t length = size - 4 - skip;
    memcpy(out, block + 4 + skip, length);
    free(block);
    return (long)length;
}
