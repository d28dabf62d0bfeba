/* lab_hd: marks functions shared verbatim by host C and CUDA device code, and exact-rounding arithmetic. */
#ifndef LAB_HD_H
#define LAB_HD_H

#ifdef __CUDACC__
#define LAB_HD __host__ __device__
#else
#define LAB_HD
#endif

/* Double-precision operations that are never fused into an FMA, so host and device give the same
 * bits. On the host the build uses -ffp-contract=off; nvcc contracts by default, hence the intrinsics. */
#if defined(__CUDA_ARCH__)
#define LAB_DMUL(a, b) __dmul_rn((a), (b))
#define LAB_DADD(a, b) __dadd_rn((a), (b))
#else
#define LAB_DMUL(a, b) ((a) * (b))
#define LAB_DADD(a, b) ((a) + (b))
#endif

#endif
