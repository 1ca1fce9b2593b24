/* 2-D im2col and its adjoint col2im over NCHW float32, for Conv and ConvGrad (the products go to gemm_f32).
   cols has the layout (planes, kh * kw, oh, ow), planes = N * C; out-of-image cells read as zero. */
#include "kernels.h"

API void im2col_f32(int planes, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl,
                    int dh, int dw, const float *x, float *cols) {
  for (int c = 0; c < planes; c++, x += h * w) {
    for (int ki = 0; ki < kh; ki++) {
      for (int kj = 0; kj < kw; kj++) {
        int lo, hi, off = kj * dw - pl;
        valid_columns(off, w, ow, sw, &lo, &hi);
        for (int i = 0; i < oh; i++, cols += ow) {
          int ih = i * sh - pt + ki * dh;
          if (ih < 0 || ih >= h) {
            for (int j = 0; j < ow; j++) cols[j] = 0.0f;
            continue;
          }
          const float *row = x + ih * w + off;
          for (int j = 0; j < lo; j++) cols[j] = 0.0f;
          if (sw == 1) for (int j = lo; j < hi; j++) cols[j] = row[j];
          else for (int j = lo; j < hi; j++) cols[j] = row[j * sw];
          for (int j = hi; j < ow; j++) cols[j] = 0.0f;
        }
      }
    }
  }
}

/* x = 0, then every column cell is added back where im2col took it from. */
API void col2im_f32(int planes, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl,
                    int dh, int dw, const float *cols, float *x) {
  for (int i = 0; i < planes * h * w; i++) x[i] = 0.0f;
  for (int c = 0; c < planes; c++, x += h * w) {
    for (int ki = 0; ki < kh; ki++) {
      for (int kj = 0; kj < kw; kj++) {
        int lo, hi, off = kj * dw - pl;
        valid_columns(off, w, ow, sw, &lo, &hi);
        for (int i = 0; i < oh; i++, cols += ow) {
          int ih = i * sh - pt + ki * dh;
          if (ih < 0 || ih >= h) continue;
          float *row = x + ih * w + off;
          if (sw == 1) for (int j = lo; j < hi; j++) row[j] += cols[j];
          else for (int j = lo; j < hi; j++) row[j * sw] += cols[j];
        }
      }
    }
  }
}
