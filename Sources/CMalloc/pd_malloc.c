// pd_malloc: see include/pd_malloc.h.
#include "pd_malloc.h"

#include <stdlib.h>  // defines __GLIBC__ on glibc
#if defined(__GLIBC__)
#include <malloc.h>
#endif

int pd_malloc_fix_thresholds(int bytes) {
#if defined(__GLIBC__)
    return mallopt(M_MMAP_THRESHOLD, bytes) == 1 && mallopt(M_TRIM_THRESHOLD, bytes) == 1;
#else
    (void)bytes;
    return 0;
#endif
}

int pd_malloc_trim(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}
