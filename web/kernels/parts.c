/* Convolution and pooling kernels cut into parts for the threaded module (web/lib/threads.mjs): part `part` of
   `parts` computes a slice of the planes or channels, each output as the whole call computes it. */
#include "entries.h"

#define CUT(total, part, parts) ((int)((long long)(total) * (part) / (parts)))
#define WINDOW int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw
#define WINDOW_ARGS h, w, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw

API void im2col_f32_part(int part, int parts, int planes, WINDOW, const float *x, float *cols) {
  int lo = CUT(planes, part, parts), hi = CUT(planes, part + 1, parts);
  if (lo < hi) im2col_f32(hi - lo, WINDOW_ARGS, x + lo * h * w, cols + lo * kh * kw * oh * ow);
}

API void col2im_f32_part(int part, int parts, int planes, WINDOW, const float *cols, float *x) {
  int lo = CUT(planes, part, parts), hi = CUT(planes, part + 1, parts);
  if (lo < hi) col2im_f32(hi - lo, WINDOW_ARGS, cols + lo * kh * kw * oh * ow, x + lo * h * w);
}

API void maxpool_f32_part(int part, int parts, int planes, WINDOW, const float *x, float *y, long long *indices) {
  int lo = CUT(planes, part, parts), hi = CUT(planes, part + 1, parts), size = (hi - lo) * oh * ow;
  if (lo >= hi) return;
  long long *at = indices ? indices + lo * oh * ow : 0;
  maxpool_f32(hi - lo, WINDOW_ARGS, x + lo * h * w, y + lo * oh * ow, at);
  for (int i = 0; at && i < size; i++) at[i] += (long long)lo * h * w;   /* indices into the whole x */
}

/* Channels [lo, hi) of every image. */
API void depthwise_f32_part(int part, int parts, int n, int c, WINDOW, const float *x, const float *filters,
                            const float *bias, float *y) {
  int lo = CUT(c, part, parts), hi = CUT(c, part + 1, parts);
  for (int i = 0; i < n && lo < hi; i++)
    depthwise_f32(1, hi - lo, WINDOW_ARGS, x + (i * c + lo) * h * w, filters + lo * kh * kw, bias ? bias + lo : 0,
                  y + (i * c + lo) * oh * ow);
}

/* Channels [lo, hi) of every image; a channel's filter gradient is summed over the images in order, as the whole
   call sums it, through a copy of the part's filter gradients on the stack. */
API void depthwise_grad_f32_part(int part, int parts, int n, int c, WINDOW, const float *dy, const float *x,
                                 const float *filters, float *dx, float *dfilters) {
  int lo = CUT(c, part, parts), hi = CUT(c, part + 1, parts), taps = kh * kw;
  float one_[dfilters && lo < hi ? (hi - lo) * taps : 1], *one = dfilters ? one_ : 0;
  if (dfilters) for (int i = lo * taps; i < hi * taps; i++) dfilters[i] = 0.0f;
  for (int i = 0; i < n && lo < hi; i++) {
    depthwise_grad_f32(1, hi - lo, WINDOW_ARGS, dy + (i * c + lo) * oh * ow, x + (i * c + lo) * h * w,
                       filters + lo * taps, dx ? dx + (i * c + lo) * h * w : 0, one);
    for (int t = 0; one && t < (hi - lo) * taps; t++) dfilters[lo * taps + t] += one[t];
  }
}
