// pd_cpu: what the processor can run, asked once through the compiler's cpuid builtins.
#ifndef PD_CPU_H
#define PD_CPU_H

#ifdef __cplusplus
extern "C" {
#endif

/// 1 when the processor (and the OS, which must save the YMM registers) supports AVX2 and FMA, else 0.
int pd_cpu_has_avx2_fma(void);

#ifdef __cplusplus
}
#endif

#endif
