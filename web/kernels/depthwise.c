/* Depthwise 2-D convolution (group = channels, one kh x kw filter per channel) over NCHW float32, and its
   input and filter gradients.  Each filter tap adds a shifted, strided copy of the input plane to the output
   plane (rows and columns outside the image skipped), so the inner loops run over contiguous output rows. */
#include "kernels.h"

typedef struct {
  int h, w, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw;
} window;

/* For tap (ki, kj) and output row i: the input row it reads (NULL outside the image), shifted so that output
   column j reads row[j * sw]; lo..hi are the output columns that read inside the image. */
static inline const float *tap_row(const window *g, const float *plane, int ki, int kj, int i, int lo, int hi) {
  int ih = i * g->sh - g->pt + ki * g->dh;
  if (ih < 0 || ih >= g->h || lo >= hi) return 0;
  return plane + ih * g->w + kj * g->dw - g->pl;
}

API void depthwise_f32(int n, int c, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl,
                       int dh, int dw, const float *x, const float *filters, const float *bias, float *y) {
  window g = {h, w, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw};
  for (int plane = 0; plane < n * c; plane++, x += h * w, y += oh * ow) {
    int ch = plane % c;
    const float *f = filters + ch * kh * kw;
    float b = bias ? bias[ch] : 0.0f;
    for (int i = 0; i < oh * ow; i++) y[i] = b;
    for (int ki = 0; ki < kh; ki++)
      for (int kj = 0; kj < kw; kj++) {
        float v = f[ki * kw + kj];
        int lo, hi;
        valid_columns(kj * dw - pl, w, ow, sw, &lo, &hi);
        for (int i = 0; i < oh; i++) {
          const float *row = tap_row(&g, x, ki, kj, i, lo, hi);
          if (!row) continue;
          float *out = y + i * ow;
          if (sw == 1) for (int j = lo; j < hi; j++) out[j] += v * row[j];
          else for (int j = lo; j < hi; j++) out[j] += v * row[j * sw];
        }
      }
  }
}

/* dx (when not NULL) = the transposed convolution of dy; dfilters (when not NULL) = per tap, the sum over the
   batch of dy times the input cells that tap read. */
API void depthwise_grad_f32(int n, int c, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt,
                            int pl, int dh, int dw, const float *dy, const float *x, const float *filters, float *dx,
                            float *dfilters) {
  window g = {h, w, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw};
  if (dfilters) for (int i = 0; i < c * kh * kw; i++) dfilters[i] = 0.0f;
  for (int plane = 0; plane < n * c; plane++, x += h * w, dy += oh * ow) {
    int ch = plane % c;
    const float *f = filters + ch * kh * kw;
    float *dxp = dx ? dx + plane * h * w : 0;
    if (dxp) for (int i = 0; i < h * w; i++) dxp[i] = 0.0f;
    for (int ki = 0; ki < kh; ki++)
      for (int kj = 0; kj < kw; kj++) {
        float v = f[ki * kw + kj];
        int lo, hi;
        valid_columns(kj * dw - pl, w, ow, sw, &lo, &hi);
        v128_t acc = wasm_f32x4_splat(0.0f);
        float tail = 0.0f;
        for (int i = 0; i < oh; i++) {
          const float *row = tap_row(&g, x, ki, kj, i, lo, hi);
          if (!row) continue;
          const float *d = dy + i * ow;
          if (dxp) {
            float *back = dxp + (row - x);
            if (sw == 1) for (int j = lo; j < hi; j++) back[j] += v * d[j];
            else for (int j = lo; j < hi; j++) back[j * sw] += v * d[j];
          }
          if (!dfilters) continue;
          int j = lo;
          if (sw == 1)
            for (; j + 4 <= hi; j += 4)
              acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_v128_load(d + j), wasm_v128_load(row + j)));
          for (; j < hi; j++) tail += d[j] * row[j * sw];
        }
        if (dfilters) {
          float t[4];
          wasm_v128_store(t, acc);
          dfilters[ch * kh * kw + ki * kw + kj] += ((t[0] + t[1]) + (t[2] + t[3])) + tail;
        }
      }
  }
}
