// pd_cpu: what the processor can run, asked once through the compiler's cpuid builtins.
#ifndef PD_CPU_H
#define PD_CPU_H

#ifdef __cplusplus
extern "C" {
#endif

/// 1 when the processor (and the OS, which must save the YMM registers) supports AVX2 and FMA, else 0.
int pd_cpu_has_avx2_fma(void);

/// 1 when the processor (and the OS, which must save the ZMM and mask registers) supports AVX-512
/// F, BW, VL, DQ and VNNI besides AVX2 and FMA, else 0: what CNNKernelsAVX512 is compiled for.
int pd_cpu_has_avx512_vnni(void);

#ifdef __cplusplus
}
#endif

#endif
