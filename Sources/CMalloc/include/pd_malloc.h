// pd_malloc: glibc's malloc extensions the memory guard needs (<malloc.h> is not in Swift's Glibc
// module).
#ifndef PD_MALLOC_H
#define PD_MALLOC_H

#ifdef __cplusplus
extern "C" {
#endif

/// Hands the free memory malloc holds (in every arena) back to the system: malloc_trim(0).
/// Returns 1 when some was released, else 0 (also where the C library has no malloc_trim).
int pd_malloc_trim(void);

/// Fixes malloc's mmap and trim thresholds at `bytes` (mallopt M_MMAP_THRESHOLD and
/// M_TRIM_THRESHOLD), which also stops glibc raising them after a large free: buffers of that
/// size or more are then mapped on their own and unmapped when freed. Returns 1 when both were
/// set, else 0.
int pd_malloc_fix_thresholds(int bytes);

#ifdef __cplusplus
}
#endif

#endif
