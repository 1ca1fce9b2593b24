/* Softmax and sigmoid (with their gradients) over float32 rows, on a SIMD exp.
   exp: x = n ln2 + r with |r| <= ln2 / 2, e^r by Cephes' expf polynomial, times 2^n; 0 below -87.33 (where
   expf is subnormal), inf above 88.72, NaN stays NaN.  The tests hold it to a few ulp of numpy's exp. */
#include "kernels.h"

static inline v128_t exp4(v128_t x) {
  v128_t hi = wasm_f32x4_splat(88.7228f), lo = wasm_f32x4_splat(-87.3365f);
  v128_t nan = wasm_f32x4_ne(x, x), over = wasm_f32x4_gt(x, hi), under = wasm_f32x4_lt(x, lo);
  v128_t c = wasm_f32x4_min(wasm_f32x4_max(x, lo), hi);
  v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(c, wasm_f32x4_splat(1.44269504088896341f)));
  v128_t r = wasm_f32x4_sub(c, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
  p = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(p, r), r), r), wasm_f32x4_splat(1.0f));
  /* 2^n in two halves, so that n = 128 (e^88.7 overflows only in the last step) stays representable */
  v128_t half = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_mul(n, wasm_f32x4_splat(0.5f))),
                                              wasm_i32x4_splat(127)), 23);
  v128_t rest = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_sub(wasm_i32x4_trunc_sat_f32x4(n),
      wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_mul(n, wasm_f32x4_splat(0.5f)))), wasm_i32x4_splat(127)), 23);
  v128_t y = wasm_f32x4_mul(wasm_f32x4_mul(p, half), rest);
  y = wasm_v128_bitselect(wasm_f32x4_splat(__builtin_inff()), y, over);
  y = wasm_v128_andnot(y, under);
  return wasm_v128_bitselect(x, y, nan);
}

/* Loads and stores of the last n % 4 elements of a row through a zero-padded 4-float buffer. */
static inline v128_t load_tail(const float *x, int n, float fill) {
  float t[4] = {fill, fill, fill, fill};
  for (int i = 0; i < n; i++) t[i] = x[i];
  return wasm_v128_load(t);
}

static inline void store_tail(float *y, int n, v128_t v) {
  float t[4];
  wasm_v128_store(t, v);
  for (int i = 0; i < n; i++) y[i] = t[i];
}

static inline float hsum(v128_t v) {
  float t[4];
  wasm_v128_store(t, v);
  return (t[0] + t[1]) + (t[2] + t[3]);
}

/* y = exp(x - max) / sum(exp(x - max)) along each row of `cols` values (the rows are contiguous). */
API void softmax_f32(int rows, int cols, const float *x, float *y) {
  int full = cols & ~3, tail = cols - full;
  for (int r = 0; r < rows; r++, x += cols, y += cols) {
    v128_t m = wasm_f32x4_splat(-__builtin_inff());
    for (int j = 0; j < full; j += 4) m = wasm_f32x4_pmax(m, wasm_v128_load(x + j));
    if (tail) m = wasm_f32x4_pmax(m, load_tail(x + full, tail, -__builtin_inff()));
    float t[4], top;
    wasm_v128_store(t, m);
    top = t[0] > t[1] ? t[0] : t[1];
    top = top > t[2] ? top : t[2];
    top = top > t[3] ? top : t[3];
    for (int j = 0; j < cols; j++) if (x[j] != x[j]) top = x[j];     /* a NaN row stays NaN, as in numpy */
    v128_t shift = wasm_f32x4_splat(top), s = wasm_f32x4_splat(0.0f);
    for (int j = 0; j < full; j += 4) {
      v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(x + j), shift));
      wasm_v128_store(y + j, e);
      s = wasm_f32x4_add(s, e);
    }
    if (tail) {
      v128_t e = exp4(wasm_f32x4_sub(load_tail(x + full, tail, -__builtin_inff()), shift));
      store_tail(y + full, tail, e);
      s = wasm_f32x4_add(s, e);
    }
    v128_t total = wasm_f32x4_splat(hsum(s));
    for (int j = 0; j < full; j += 4) wasm_v128_store(y + j, wasm_f32x4_div(wasm_v128_load(y + j), total));
    if (tail) store_tail(y + full, tail, wasm_f32x4_div(load_tail(y + full, tail, 0.0f), total));
  }
}

/* dx = y * (dy - sum(dy * y)) along each row. */
API void softmax_grad_f32(int rows, int cols, const float *dy, const float *y, float *dx) {
  int full = cols & ~3, tail = cols - full;
  for (int r = 0; r < rows; r++, dy += cols, y += cols, dx += cols) {
    v128_t s = wasm_f32x4_splat(0.0f);
    for (int j = 0; j < full; j += 4) s = wasm_f32x4_add(s, wasm_f32x4_mul(wasm_v128_load(dy + j), wasm_v128_load(y + j)));
    if (tail) s = wasm_f32x4_add(s, wasm_f32x4_mul(load_tail(dy + full, tail, 0.0f), load_tail(y + full, tail, 0.0f)));
    v128_t dot = wasm_f32x4_splat(hsum(s));
    for (int j = 0; j < full; j += 4)
      wasm_v128_store(dx + j, wasm_f32x4_mul(wasm_v128_load(y + j), wasm_f32x4_sub(wasm_v128_load(dy + j), dot)));
    if (tail)
      store_tail(dx + full, tail, wasm_f32x4_mul(load_tail(y + full, tail, 0.0f),
                                                 wasm_f32x4_sub(load_tail(dy + full, tail, 0.0f), dot)));
  }
}

/* numpy's formula: e = exp(-|x|), y = 1 / (1 + e) where x >= 0, else e / (1 + e). */
static inline v128_t sigmoid4(v128_t x) {
  v128_t e = exp4(wasm_f32x4_neg(wasm_f32x4_abs(x)));
  v128_t d = wasm_f32x4_add(wasm_f32x4_splat(1.0f), e);
  v128_t pos = wasm_f32x4_div(wasm_f32x4_splat(1.0f), d), neg = wasm_f32x4_div(e, d);
  return wasm_v128_bitselect(pos, neg, wasm_f32x4_ge(x, wasm_f32x4_splat(0.0f)));
}

API void sigmoid_f32(int n, const float *x, float *y) {
  int i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, sigmoid4(wasm_v128_load(x + i)));
  if (i < n) store_tail(y + i, n - i, sigmoid4(load_tail(x + i, n - i, 0.0f)));
}

/* dx = dy * y * (1 - y) */
API void sigmoid_grad_f32(int n, const float *dy, const float *y, float *dx) {
  int i = 0;
  v128_t one = wasm_f32x4_splat(1.0f);
  for (; i + 4 <= n; i += 4) {
    v128_t yi = wasm_v128_load(y + i);
    wasm_v128_store(dx + i, wasm_f32x4_mul(wasm_f32x4_mul(wasm_v128_load(dy + i), yi), wasm_f32x4_sub(one, yi)));
  }
  for (; i < n; i++) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}
