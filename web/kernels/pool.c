/* 2-D max pooling over NCHW float32 with the flat argmax indices MaxPoolGrad scatters back through.
   Cells outside the image never win (as -inf padding); ties and NaN follow numpy's argmax: the first
   maximum in window order, a NaN beats every number. */
#include "kernels.h"

enum { MAX_WINDOW = 64 };

/* Branch-free: pooling windows of real data compare in random order. */
static inline int wins(float v, float best) { return (v > best) | ((v != v) & (best == best)); }

/* The window at (ih0, iw0) that crosses the image border: only its cells inside count. */
static int edge_argmax(const float *x, int h, int w, int ih0, int iw0, int kh, int kw, int dh, int dw) {
  int at = -1;
  float best = 0.0f;
  for (int ki = 0; ki < kh; ki++) {
    int ih = ih0 + ki * dh;
    if (ih < 0 || ih >= h) continue;
    for (int kj = 0; kj < kw; kj++) {
      int iw = iw0 + kj * dw;
      if (iw < 0 || iw >= w) continue;
      float v = x[ih * w + iw];
      if (at < 0 || wins(v, best)) { best = v; at = ih * w + iw; }
    }
  }
  return at;
}

/* Four windows side by side (output columns j .. j + 3), one SIMD lane each: their maxima go to y[0..3], their
   flat indices (plane base + cell) to indices[0..3]. */
static inline v128_t strided4(const float *p, int sw) {
  if (sw == 1) return wasm_v128_load(p);
  if (sw == 2) return wasm_i32x4_shuffle(wasm_v128_load(p), wasm_v128_load(p + 4), 0, 2, 4, 6);
  return wasm_f32x4_make(p[0], p[sw], p[2 * sw], p[3 * sw]);
}

static void argmax4(const float *p, int sw, const int *offsets, int k, int cell, long long base, float *y,
                    long long *indices) {
  v128_t best = strided4(p, sw), q = wasm_i32x4_splat(0);
  for (int t = 1; t < k; t++) {
    v128_t v = strided4(p + offsets[t], sw);
    v128_t take = wasm_v128_or(wasm_f32x4_gt(v, best),
                               wasm_v128_and(wasm_f32x4_ne(v, v), wasm_f32x4_eq(best, best)));
    best = wasm_v128_bitselect(v, best, take);
    q = wasm_v128_bitselect(wasm_i32x4_splat(offsets[t]), q, take);
  }
  wasm_v128_store(y, best);
  if (!indices) return;
  v128_t at = wasm_i32x4_add(q, wasm_i32x4_add(wasm_i32x4_splat(cell), wasm_i32x4_make(0, sw, 2 * sw, 3 * sw)));
  v128_t b = wasm_i64x2_splat(base);
  wasm_v128_store(indices, wasm_i64x2_add(b, wasm_i64x2_extend_low_i32x4(at)));
  wasm_v128_store(indices + 2, wasm_i64x2_add(b, wasm_i64x2_extend_high_i32x4(at)));
}

/* One window, at (ih0, iw0): its flat cell index in the plane, -1 when no cell of it is inside. */
static inline int argmax1(const float *x, int h, int w, int ih0, int iw0, int kh, int kw, int dh, int dw,
                          const int *offsets, int k, int rows_inside) {
  if (!rows_inside || iw0 < 0 || iw0 + (kw - 1) * dw >= w) return edge_argmax(x, h, w, ih0, iw0, kh, kw, dh, dw);
  const float *p = x + ih0 * w + iw0;
  float best = p[0];
  int q = 0;
  for (int t = 1; t < k; t++) {
    float v = p[offsets[t]];
    int take = wins(v, best);
    best = take ? v : best;
    q = take ? t : q;
  }
  return ih0 * w + iw0 + offsets[q];
}

API void maxpool_f32(int planes, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl,
                     int dh, int dw, const float *x, float *y, long long *indices) {
  int offsets[MAX_WINDOW], k = kh * kw;
  if (k > MAX_WINDOW) k = 0;                       /* large windows: every window takes the edge path */
  for (int ki = 0, n = 0; k && ki < kh; ki++)
    for (int kj = 0; kj < kw; kj++) offsets[n++] = ki * dh * w + kj * dw;
  int last_h = (kh - 1) * dh, last_w = (kw - 1) * dw;
  int first = (pl + sw - 1) / sw;                  /* the first output column whose window starts inside */
  for (int c = 0; c < planes; c++, x += h * w) {
    long long base = (long long)c * h * w;
    for (int i = 0; i < oh; i++) {
      int ih0 = i * sh - pt;
      int rows_inside = k && ih0 >= 0 && ih0 + last_h < h;
      for (int j = 0; j < ow;) {
        /* four windows at once where all of them, and the extra float a stride-2 load reads, are inside */
        if (rows_inside && j >= first && j + 4 <= ow && (j + 3) * sw - pl + last_w + (sw == 2) < w) {
          int cell = ih0 * w + j * sw - pl;
          argmax4(x + cell, sw, offsets, k, cell, base, y + j, indices ? indices + j : 0);
          j += 4;
          continue;
        }
        int at = argmax1(x, h, w, ih0, j * sw - pl, kh, kw, dh, dw, offsets, k, rows_inside);
        y[j] = at < 0 ? -__builtin_inff() : x[at];
        if (indices) indices[j] = base + (at < 0 ? 0 : at);
        j++;
      }
      y += ow;
      if (indices) indices += ow;
    }
  }
}

/* dx = 0, then dx[indices[i]] += dy[i]; 0, or -1 (dx unfinished) when an index lies outside dx. */
API int maxpool_grad_f32(int n_out, int n_in, const float *dy, const long long *indices, float *dx) {
  for (int i = 0; i < n_in; i++) dx[i] = 0.0f;
  for (int i = 0; i < n_out; i++) {
    if ((unsigned long long)indices[i] >= (unsigned long long)n_in) return -1;
    dx[indices[i]] += dy[i];
  }
  return 0;
}
