/* onnxtrain's SIMD kernels: plain C over caller-owned float32 buffers, compiled to a wasm side module.
   Sizes and strides are in elements.  No libc: the module imports only the memory of the process that
   loads it (Pyodide's), so numpy arrays are used in place. */
#ifndef ONNXTRAIN_KERNELS_H
#define ONNXTRAIN_KERNELS_H

#include <wasm_simd128.h>

#define API __attribute__((visibility("default")))

typedef float f32x4 __attribute__((vector_size(16)));

/* a * b + c, fused where the engine has relaxed SIMD (the build makes one module with and one without). */
static inline v128_t madd(v128_t a, v128_t b, v128_t c) {
#ifdef RELAXED
  return (v128_t)__builtin_wasm_relaxed_madd_f32x4((f32x4)a, (f32x4)b, (f32x4)c);
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

#endif
