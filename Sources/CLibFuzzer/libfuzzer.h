// libFuzzer's driver entry point, declared weak: in a build with `-sanitize=fuzzer` it is
// libFuzzer's; in an ordinary build it is absent (NULL) and PhotoDrainFuzz replays inputs itself.
#ifndef PHOTODRAIN_LIBFUZZER_H
#define PHOTODRAIN_LIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size))
    __attribute__((weak));

/// 1 when this binary was linked with libFuzzer.
static inline int pd_libfuzzer_linked(void) { return LLVMFuzzerRunDriver != NULL; }

#endif
