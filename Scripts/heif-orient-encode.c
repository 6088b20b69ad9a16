// heif-orient-encode: writes a HEIC whose irot/imir boxes carry an orientation, which heif-enc
// (libheif-examples 1.15) cannot do. Used only by Scripts/make-heif-fixtures.
//
//   heif-orient-encode IN.pgm ORIENTATION EXIF_ORIENTATION OUT.heic
//
// IN.pgm is a binary 8-bit PGM holding the *stored* pixels; ORIENTATION (1..8, EXIF numbering) is
// turned into irot/imir by libheif's encoder (heif_encoding_options.image_orientation), so a reader
// applying them shows the picture upright. EXIF_ORIENTATION 0 writes no EXIF; 1..8 attaches an EXIF
// block with that orientation tag, as phones do beside irot.
#include <libheif/heif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(struct heif_error e, const char *what) {
    if (e.code != heif_error_Ok) {
        fprintf(stderr, "heif-orient-encode: %s: %s\n", what, e.message);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: heif-orient-encode IN.pgm ORIENTATION EXIF_ORIENTATION OUT.heic\n");
        return 64;
    }
    FILE *in = fopen(argv[1], "rb");
    int width = 0, height = 0, maxval = 0;
    if (!in || fscanf(in, "P5 %d %d %d", &width, &height, &maxval) != 3 || maxval != 255 || fgetc(in) == EOF) {
        fprintf(stderr, "heif-orient-encode: %s is not an 8-bit binary PGM\n", argv[1]);
        return 1;
    }
    int orientation = atoi(argv[2]), exif = atoi(argv[3]);
    if (orientation < 1 || orientation > 8 || exif < 0 || exif > 8) {
        fprintf(stderr, "heif-orient-encode: orientations are 1..8 (EXIF 0 for none)\n");
        return 64;
    }
    struct heif_image *image = NULL;
    check(heif_image_create(width, height, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image), "create");
    check(heif_image_add_plane(image, heif_channel_interleaved, width, height, 8), "add plane");
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            int v = fgetc(in);
            if (v == EOF) {
                fprintf(stderr, "heif-orient-encode: %s is truncated\n", argv[1]);
                return 1;
            }
            memset(plane + (size_t)y * (size_t)stride + (size_t)x * 3, v, 3);
        }
    }
    fclose(in);

    struct heif_context *ctx = heif_context_alloc();
    struct heif_encoder *encoder = NULL;
    check(heif_context_get_encoder_for_format(ctx, heif_compression_HEVC, &encoder), "encoder");
    check(heif_encoder_set_lossy_quality(encoder, 90), "quality");
    struct heif_encoding_options *options = heif_encoding_options_alloc();
    options->image_orientation = (enum heif_orientation)orientation;
    struct heif_image_handle *handle = NULL;
    check(heif_context_encode_image(ctx, image, encoder, options, &handle), "encode");
    if (exif > 0) {
        // A big-endian TIFF header, one IFD with one entry: Orientation (0x0112), SHORT, 1 value.
        uint8_t tiff[] = {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1,
                          0, (uint8_t)exif, 0, 0, 0, 0, 0, 0};
        check(heif_context_add_exif_metadata(ctx, handle, tiff, (int)sizeof(tiff)), "exif");
    }
    check(heif_context_write_to_file(ctx, argv[4]), "write");
    heif_image_handle_release(handle);
    heif_encoding_options_free(options);
    heif_encoder_release(encoder);
    heif_image_release(image);
    heif_context_free(ctx);
    return 0;
}
