/* onnxtrain's SIMD kernels: plain C over caller-owned float32 buffers, compiled to a wasm side module (no libc:
   the module imports only the memory of the process that loads it, Pyodide's, so numpy arrays are used in place)
   and, through host_simd.h, to a host shared library that CPython loads with ctypes.  Sizes and strides are in
   elements. */
#ifndef ONNXTRAIN_KERNELS_H
#define ONNXTRAIN_KERNELS_H

#ifdef __wasm__
#include <wasm_simd128.h>
#else
#include "host_simd.h"
#endif

#define API __attribute__((visibility("default")))

/* An address in the optimizers' pointer tables: 32 bits in wasm32, 64 on a 64-bit host. */
typedef __INTPTR_TYPE__ addr_t;

typedef float f32x4 __attribute__((vector_size(16)));

/* a * b + c, fused where the engine has relaxed SIMD (the build makes one module with and one without). */
static inline v128_t madd(v128_t a, v128_t b, v128_t c) {
#if defined(RELAXED) && defined(__wasm__)
  return (v128_t)__builtin_wasm_relaxed_madd_f32x4((f32x4)a, (f32x4)b, (f32x4)c);
#elif defined(RELAXED)
#pragma clang fp contract(fast)
  return (v128_t)((f32x4)a * (f32x4)b + (f32x4)c);
#else
  return wasm_f32x4_add(wasm_f32x4_mul(a, b), c);
#endif
}

/* The output columns [*lo, *hi) whose input column j * sw + off (off = kj * dw - pl) lies in [0, w). */
static inline void valid_columns(int off, int w, int ow, int sw, int *lo, int *hi) {
  int first = off >= 0 ? 0 : (-off + sw - 1) / sw;
  int last = w - 1 - off < 0 ? -1 : (w - 1 - off) / sw;
  if (last > ow - 1) last = ow - 1;
  *lo = first;
  *hi = last + 1 > first ? last + 1 : first;
}

/* Shared between the kernel files (not exported): numpy's pairwise sum (loss.c) and np.add.reduce of a contiguous
row (reduce.c), float32 exp, log and tanh through double (mathlib.c). */
float pairwise_sum(const float *a, int n, int stride, float zero);
float add_reduce(const float *a, int n, float identity, float zero);
float exp_f32_1(float x);
float log_f32_1(float x);
float tanh_f32_1(float x);
double exp_f64(double x);
double erf_f64(double x);

#endif
