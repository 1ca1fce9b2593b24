/* 2-D max pooling over NCHW float32 with the flat argmax indices MaxPoolGrad scatters back through.
   Cells outside the image never win (as -inf padding); ties and NaN follow numpy's argmax: the first
   maximum in window order, a NaN beats every number. */
#include "kernels.h"

API void maxpool_f32(int planes, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl,
                     int dh, int dw, const float *x, float *y, long long *indices) {
  for (int c = 0; c < planes; c++, x += h * w) {
    long long base = (long long)c * h * w;
    for (int i = 0; i < oh; i++) {
      for (int j = 0; j < ow; j++, y++) {
        float best = 0.0f;
        int at = -1;
        for (int ki = 0; ki < kh; ki++) {
          int ih = i * sh - pt + ki * dh;
          if (ih < 0 || ih >= h) continue;
          for (int kj = 0; kj < kw; kj++) {
            int iw = j * sw - pl + kj * dw;
            if (iw < 0 || iw >= w) continue;
            float v = x[ih * w + iw];
            if (at < 0 || (best == best && (v > best || v != v))) { best = v; at = ih * w + iw; }
          }
        }
        *y = at < 0 ? -__builtin_inff() : best;
        if (indices) *indices++ = base + (at < 0 ? 0 : at);
      }
    }
  }
}

/* dx = 0, then dx[indices[i]] += dy[i]. */
API void maxpool_grad_f32(int n_out, int n_in, const float *dy, const long long *indices, float *dx) {
  for (int i = 0; i < n_in; i++) dx[i] = 0.0f;
  for (int i = 0; i < n_out; i++) dx[indices[i]] += dy[i];
}
