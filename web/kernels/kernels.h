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

#endif
