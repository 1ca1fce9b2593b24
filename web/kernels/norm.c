/* LayerNormalization over the last `cols` values of each row, and its gradient, in ops/norm.py's numpy order: the
   row means as numpy's mean (its initial value plus the row's pairwise sum, divided by the count), then one IEEE
   operation per element in the order numpy applies them, so that the bits are the numpy provider's. */
#include "kernels.h"

static inline float row_mean(const float *a, int n, float identity, float zero) {
  return add_reduce(a, n, identity, zero) / (float)n;
}

/* y = (x - mean) * inv_std * scale (+ bias), mean and inv_std = 1 / sqrt(mean((x - mean)^2) + epsilon) per row;
   work: cols floats. */
API void layernorm_f32(int rows, int cols, const float *x, const float *scale, const float *bias, float epsilon,
                       float identity, float zero, float *y, float *mean, float *inv_std, float *work) {
  for (int r = 0; r < rows; r++, x += cols, y += cols) {
    float m = row_mean(x, cols, identity, zero);
    for (int j = 0; j < cols; j++) {
      float d = x[j] - m;
      work[j] = d * d;
    }
    float inv = 1.0f / __builtin_sqrtf(row_mean(work, cols, identity, zero) + epsilon);
    for (int j = 0; j < cols; j++) y[j] = ((x[j] - m) * inv) * scale[j];
    if (bias)
      for (int j = 0; j < cols; j++) y[j] = y[j] + bias[j];
    if (mean) mean[r] = m;
    if (inv_std) inv_std[r] = inv;
  }
}

/* dx = inv_std * ((dx_hat - mean(dx_hat)) - x_hat * mean(dx_hat * x_hat)), x_hat = (x - mean) * inv_std, dx_hat =
   dy * scale; dscale = column sums of dy * x_hat, dbias = column sums of dy, row after row from `identity` (numpy's
   sum over the leading axes when cols > 1).  Any of dx, dscale, dbias may be absent; work: 3 cols floats. */
API void layernorm_grad_f32(int rows, int cols, const float *dy, const float *x, const float *scale,
                            const float *mean, const float *inv_std, float identity, float zero, float *dx,
                            float *dscale, float *dbias, float *work) {
  float *x_hat = work, *dx_hat = work + cols, *prod = work + 2 * cols;
  for (int j = 0; j < cols; j++) {
    if (dscale) dscale[j] = identity;
    if (dbias) dbias[j] = identity;
  }
  for (int r = 0; r < rows; r++, dy += cols, x += cols) {
    float m = mean[r], inv = inv_std[r];
    for (int j = 0; j < cols; j++) x_hat[j] = (x[j] - m) * inv;
    if (dx) {
      for (int j = 0; j < cols; j++) dx_hat[j] = dy[j] * scale[j];
      for (int j = 0; j < cols; j++) prod[j] = dx_hat[j] * x_hat[j];
      float m1 = row_mean(dx_hat, cols, identity, zero), m2 = row_mean(prod, cols, identity, zero);
      for (int j = 0; j < cols; j++) dx[j] = inv * ((dx_hat[j] - m1) - x_hat[j] * m2);
      dx += cols;
    }
    if (dscale)
      for (int j = 0; j < cols; j++) dscale[j] += dy[j] * x_hat[j];
    if (dbias)
      for (int j = 0; j < cols; j++) dbias[j] += dy[j];
  }
}
