/* The wasm_simd128.h intrinsics the kernels use, for a host build (x86-64, aarch64): clang's generic vector
   extensions with wasm's semantics (NaN and -0 in min/max, saturating conversions, unaligned loads), so the same
   sources compile for the page and for CPython. */
#ifndef ONNXTRAIN_HOST_SIMD_H
#define ONNXTRAIN_HOST_SIMD_H

typedef int v128_t __attribute__((vector_size(16), aligned(16)));
typedef float host_f32x4 __attribute__((vector_size(16)));
typedef int host_i32x4 __attribute__((vector_size(16)));
typedef long long host_i64x2 __attribute__((vector_size(16)));
typedef int host_i32x2 __attribute__((vector_size(8)));

#define HOST static inline __attribute__((always_inline))
#define F(v) ((host_f32x4)(v))
#define I(v) ((host_i32x4)(v))

HOST v128_t wasm_v128_load(const void *p) { v128_t v; __builtin_memcpy(&v, p, 16); return v; }
HOST void wasm_v128_store(void *p, v128_t v) { __builtin_memcpy(p, &v, 16); }
HOST v128_t wasm_v128_load32_splat(const void *p) { int x; __builtin_memcpy(&x, p, 4); return (v128_t){x, x, x, x}; }
HOST v128_t wasm_f32x4_splat(float x) { return (v128_t)(host_f32x4){x, x, x, x}; }
HOST v128_t wasm_i32x4_splat(int x) { return (v128_t){x, x, x, x}; }
HOST v128_t wasm_i64x2_splat(long long x) { return (v128_t)(host_i64x2){x, x}; }
HOST v128_t wasm_f32x4_make(float a, float b, float c, float d) { return (v128_t)(host_f32x4){a, b, c, d}; }
HOST v128_t wasm_i32x4_make(int a, int b, int c, int d) { return (v128_t){a, b, c, d}; }

HOST v128_t wasm_f32x4_add(v128_t a, v128_t b) { return (v128_t)(F(a) + F(b)); }
HOST v128_t wasm_f32x4_sub(v128_t a, v128_t b) { return (v128_t)(F(a) - F(b)); }
HOST v128_t wasm_f32x4_mul(v128_t a, v128_t b) { return (v128_t)(F(a) * F(b)); }
HOST v128_t wasm_f32x4_div(v128_t a, v128_t b) { return (v128_t)(F(a) / F(b)); }
HOST v128_t wasm_f32x4_neg(v128_t a) { return a ^ wasm_i32x4_splat((int)0x80000000); }
HOST v128_t wasm_f32x4_abs(v128_t a) { return a & (v128_t){0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}; }
HOST v128_t wasm_f32x4_sqrt(v128_t a) {
  host_f32x4 x = F(a);
  for (int i = 0; i < 4; i++) x[i] = __builtin_sqrtf(x[i]);
  return (v128_t)x;
}
HOST v128_t wasm_f32x4_nearest(v128_t a) { return (v128_t)__builtin_elementwise_roundeven(F(a)); }
HOST v128_t wasm_f32x4_eq(v128_t a, v128_t b) { return (v128_t)(F(a) == F(b)); }
HOST v128_t wasm_f32x4_ne(v128_t a, v128_t b) { return (v128_t)(F(a) != F(b)); }
HOST v128_t wasm_f32x4_lt(v128_t a, v128_t b) { return (v128_t)(F(a) < F(b)); }
HOST v128_t wasm_f32x4_gt(v128_t a, v128_t b) { return (v128_t)(F(a) > F(b)); }
HOST v128_t wasm_f32x4_ge(v128_t a, v128_t b) { return (v128_t)(F(a) >= F(b)); }
HOST v128_t wasm_v128_and(v128_t a, v128_t b) { return a & b; }
HOST v128_t wasm_v128_or(v128_t a, v128_t b) { return a | b; }
HOST v128_t wasm_v128_andnot(v128_t a, v128_t b) { return a & ~b; }
HOST v128_t wasm_v128_bitselect(v128_t a, v128_t b, v128_t mask) { return (a & mask) | (b & ~mask); }
/* wasm's min and max: NaN when either is NaN, and -0 < +0 */
HOST v128_t wasm_f32x4_min(v128_t a, v128_t b) {
  v128_t nan = (v128_t)(F(a) != F(a)) | (v128_t)(F(b) != F(b)), same = (v128_t)(F(a) == F(b));
  v128_t r = wasm_v128_bitselect(a | b, wasm_v128_bitselect(a, b, (v128_t)(F(a) < F(b))), same);
  return wasm_v128_bitselect((v128_t)(F(a) + F(b)), r, nan);
}
HOST v128_t wasm_f32x4_max(v128_t a, v128_t b) {
  v128_t nan = (v128_t)(F(a) != F(a)) | (v128_t)(F(b) != F(b)), same = (v128_t)(F(a) == F(b));
  v128_t r = wasm_v128_bitselect(a & b, wasm_v128_bitselect(a, b, (v128_t)(F(a) > F(b))), same);
  return wasm_v128_bitselect((v128_t)(F(a) + F(b)), r, nan);
}
HOST v128_t wasm_f32x4_pmax(v128_t a, v128_t b) { return wasm_v128_bitselect(b, a, (v128_t)(F(a) < F(b))); }

HOST v128_t wasm_i32x4_add(v128_t a, v128_t b) { return a + b; }
HOST v128_t wasm_i32x4_sub(v128_t a, v128_t b) { return a - b; }
HOST v128_t wasm_i32x4_eq(v128_t a, v128_t b) { return a == b; }
HOST v128_t wasm_i32x4_shl(v128_t a, int n) { return a << (n & 31); }
/* NaN -> 0, out of range -> INT_MIN or INT_MAX */
HOST v128_t wasm_i32x4_trunc_sat_f32x4(v128_t a) {
  v128_t low = (v128_t)(F(a) < -2147483648.0f), high = (v128_t)(F(a) >= 2147483648.0f);
  v128_t inside = (v128_t)(F(a) == F(a)) & ~low & ~high;   /* NaN -> 0, out of range -> INT_MIN or INT_MAX */
  v128_t t = __builtin_convertvector((host_f32x4)(a & inside), host_i32x4) & inside;
  return t | (low & wasm_i32x4_splat((int)0x80000000)) | (high & wasm_i32x4_splat(0x7fffffff));
}
HOST v128_t wasm_i64x2_add(v128_t a, v128_t b) { return (v128_t)((host_i64x2)a + (host_i64x2)b); }
HOST v128_t wasm_i64x2_extend_low_i32x4(v128_t a) {
  return (v128_t)__builtin_convertvector((host_i32x2)__builtin_shufflevector(a, a, 0, 1), host_i64x2);
}
HOST v128_t wasm_i64x2_extend_high_i32x4(v128_t a) {
  return (v128_t)__builtin_convertvector((host_i32x2)__builtin_shufflevector(a, a, 2, 3), host_i64x2);
}
#define wasm_i32x4_shuffle(a, b, c0, c1, c2, c3) \
  ((v128_t)__builtin_shufflevector((v128_t)(a), (v128_t)(b), c0, c1, c2, c3))

#undef F
#undef I
#endif
