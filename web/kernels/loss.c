/* Softmax cross-entropy over float32 rows [N, C] with int64 labels, in the pieces between numpy's exp and log (which
   the caller keeps, so that results stay numpy's bit for bit): shift by the row maxima, the rows' sums in numpy's
   pairwise order, then log-probabilities and the loss, or the gradient from the probabilities. */
#include "kernels.h"

/* numpy's pairwise summation of n floats `stride` apart (loops_utils.h.src): below 8 one by one from `zero` (+0 in
   numpy 1, -0 in numpy 2), up to 128 in 8 accumulators, above that two halves cut at a multiple of 8. */
float pairwise_sum(const float *a, int n, int stride, float zero) {
  if (n < 8) {
    float res = zero;
    for (int i = 0; i < n; i++) res += a[i * stride];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; j++) r[j] = a[j * stride];
    int i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; j++) r[j] += a[(i + j) * stride];
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i * stride];
    return res;
  }
  int half = n / 2;
  half -= half % 8;
  return pairwise_sum(a, half, stride, zero) + pairwise_sum(a + half * stride, n - half, stride, zero);
}

/* shifted[r, j] = x[r, j] - max_j x[r, j].  1 when a row's maximum is NaN, infinite or zero (whose bits numpy's
   reduction order decides), and the caller takes numpy's path; else 0. */
API int softmax_ce_shift_f32(int rows, int cols, const float *x, float *shifted) {
  for (int r = 0; r < rows; r++, x += cols, shifted += cols) {
    float m = x[0];
    for (int j = 1; j < cols; j++) m = x[j] > m ? x[j] : m;
    for (int j = 0; j < cols; j++)
      if (x[j] != x[j]) return 1;
    if (m == 0.0f || m - m != 0.0f) return 1;
    for (int j = 0; j < cols; j++) shifted[j] = x[j] - m;
  }
  return 0;
}

/* sums[r] = np.add.reduce(e[r, :]): `identity` (numpy's initial value) plus the row's pairwise sum. */
API void softmax_ce_sums_f32(int rows, int cols, const float *e, float identity, float zero, float *sums) {
  for (int r = 0; r < rows; r++, e += cols) sums[r] = identity + pairwise_sum(e, cols, 1, zero);
}

/* The first label outside [0, cols), or -1. */
static int bad_label(int rows, int cols, const long long *labels) {
  for (int r = 0; r < rows; r++)
    if (labels[r] < 0 || labels[r] >= cols) return r;
  return -1;
}

/* log_prob = shifted - log_sums[r] in place, and *loss = the sum over rows of -log_prob[r, labels[r]] (numpy's
   pairwise order from `identity`), divided by rows when `mean`.  The first bad label's row (nothing written), or -1. */
API int softmax_ce_loss_f32(int rows, int cols, float *log_prob, const float *log_sums, const long long *labels,
                            float identity, float zero, int mean, float *picks, float *loss) {
  int bad = bad_label(rows, cols, labels);
  if (bad >= 0) return bad;
  for (int r = 0; r < rows; r++, log_prob += cols) {
    for (int j = 0; j < cols; j++) log_prob[j] -= log_sums[r];
    picks[r] = -log_prob[labels[r]];
  }
  float total = identity + pairwise_sum(picks, rows, 1, zero);
  *loss = mean ? total / (float)rows : total;
  return -1;
}

/* The gradient from the probabilities p (exp of log_prob), in place: (p - onehot(labels)) * scale, scale = dy, or
   dy / rows when `mean`.  The first bad label's row (nothing written), or -1. */
API int softmax_ce_grad_f32(int rows, int cols, float *p, const long long *labels, float dy, int mean) {
  int bad = bad_label(rows, cols, labels);
  if (bad >= 0) return bad;
  float scale = mean ? dy / (float)rows : dy;
  for (int r = 0; r < rows; r++, p += cols) {
    p[labels[r]] = p[labels[r]] - 1.0f;
    for (int j = 0; j < cols; j++) p[j] *= scale;
  }
  return -1;
}
