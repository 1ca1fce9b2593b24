/* ReLU and its gradient over float32, with numpy's results bit for bit: np.maximum(x, 0) keeps NaN (its bits
   too), keeps -0.0 in Pyodide (a scalar a >= b ? a : b) and makes it +0.0 on hosts (SSE and NEON max), and the
   gradient passes dy where x > 0 and +0 elsewhere.  Both are bit masks, also for the
   last n % 4 elements (through a 4-float buffer), so no float instruction can rewrite a NaN. */
#include "kernels.h"

static inline v128_t relu4(v128_t v) {
#ifdef __wasm__
  v128_t keep = wasm_f32x4_ge(v, wasm_f32x4_splat(0.0f));
#else
  v128_t keep = wasm_f32x4_gt(v, wasm_f32x4_splat(0.0f));
#endif
  return wasm_v128_and(v, wasm_v128_or(keep, wasm_f32x4_ne(v, v)));
}

static inline v128_t relu_grad4(v128_t dy, v128_t x) {
  return wasm_v128_and(dy, wasm_f32x4_gt(x, wasm_f32x4_splat(0.0f)));
}

API void relu_f32(int n, const float *x, float *y) {
  int i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, relu4(wasm_v128_load(x + i)));
  if (i == n) return;
  float t[4] = {0};
  for (int j = i; j < n; j++) t[j - i] = x[j];
  wasm_v128_store(t, relu4(wasm_v128_load(t)));
  for (int j = i; j < n; j++) y[j] = t[j - i];
}

API void relu_grad_f32(int n, const float *dy, const float *x, float *dx) {
  int i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(dx + i, relu_grad4(wasm_v128_load(dy + i), wasm_v128_load(x + i)));
  if (i == n) return;
  float a[4] = {0}, b[4] = {0};
  for (int j = i; j < n; j++) { a[j - i] = dy[j]; b[j - i] = x[j]; }
  wasm_v128_store(a, relu_grad4(wasm_v128_load(a), wasm_v128_load(b)));
  for (int j = i; j < n; j++) dx[j] = a[j - i];
}

/* Clip over float32 as numpy's clip (bounds not NaN): min(max(x, lo), hi), where max is lo unless x > lo and min
   is hi unless below hi (so -0.0 clipped at 0 gives the bound's +0, as numpy does), and a NaN x is kept, bits too. */
static inline v128_t clip4(v128_t v, v128_t lo, v128_t hi) {
  v128_t r = wasm_v128_bitselect(v, lo, wasm_f32x4_gt(v, lo));
  r = wasm_v128_bitselect(r, hi, wasm_f32x4_lt(r, hi));
  return wasm_v128_bitselect(v, r, wasm_f32x4_ne(v, v));
}

API void clip_f32(int n, const float *x, float lo, float hi, float *y) {
  const v128_t vlo = wasm_f32x4_splat(lo), vhi = wasm_f32x4_splat(hi);
  int i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, clip4(wasm_v128_load(x + i), vlo, vhi));
  if (i == n) return;
  float t[4] = {0};
  for (int j = i; j < n; j++) t[j - i] = x[j];
  wasm_v128_store(t, clip4(wasm_v128_load(t), vlo, vhi));
  for (int j = i; j < n; j++) y[j] = t[j - i];
}
