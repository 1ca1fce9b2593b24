/* Sums of contiguous planes (GlobalAveragePool, bias gradients): four SIMD accumulators per plane. */
#include "entries.h"

API void plane_sums_f32(int planes, int size, const float *x, float *out) {
  for (int p = 0; p < planes; p++, x += size) {
    v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
    int i = 0;
    for (; i + 16 <= size; i += 16) {
      s0 = wasm_f32x4_add(s0, wasm_v128_load(x + i));
      s1 = wasm_f32x4_add(s1, wasm_v128_load(x + i + 4));
      s2 = wasm_f32x4_add(s2, wasm_v128_load(x + i + 8));
      s3 = wasm_f32x4_add(s3, wasm_v128_load(x + i + 12));
    }
    for (; i + 4 <= size; i += 4) s0 = wasm_f32x4_add(s0, wasm_v128_load(x + i));
    float t[4];
    wasm_v128_store(t, wasm_f32x4_add(wasm_f32x4_add(s0, s1), wasm_f32x4_add(s2, s3)));
    float sum = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < size; i++) sum += x[i];
    out[p] = sum;
  }
}

/* How many of x's n values are NaN or infinite: exponent bits all ones (the finite check of a training step). */
API int nonfinite_f32(int n, const float *x) {
  const v128_t mask = wasm_i32x4_splat(0x7f800000);
  v128_t c0 = wasm_i32x4_splat(0), c1 = c0;
  int i = 0;
  for (; i + 8 <= n; i += 8) {  /* a lane of all-ones bits is -1: subtracting counts it */
    c0 = wasm_i32x4_sub(c0, wasm_i32x4_eq(wasm_v128_and(wasm_v128_load(x + i), mask), mask));
    c1 = wasm_i32x4_sub(c1, wasm_i32x4_eq(wasm_v128_and(wasm_v128_load(x + i + 4), mask), mask));
  }
  int t[4];
  wasm_v128_store(t, wasm_i32x4_add(c0, c1));
  int count = t[0] + t[1] + t[2] + t[3];
  const unsigned *bits = (const unsigned *)x;
  for (; i < n; i++) count += (bits[i] & 0x7f800000u) == 0x7f800000u;
  return count;
}

/* out[j] = identity + x[0, j] + x[1, j] + ..., row after row: np.add.reduce over axis 0 of a C-contiguous
   [rows, cols] array with cols > 1 (numpy adds whole rows in order there; `identity` is its initial value). */
API void column_sums_f32(int rows, int cols, const float *x, float identity, float *out) {
  column_range_sums_f32(rows, cols, 0, cols, x, identity, out);
}

/* column_sums_f32's columns [lo, hi) only (out[lo .. hi)), each summed as the whole call sums it. */
void column_range_sums_f32(int rows, int cols, int lo, int hi, const float *x, float identity, float *out) {
  for (int j = lo; j < hi; j++) out[j] = identity;
  for (int r = 0; r < rows; r++, x += cols)
    for (int j = lo; j < hi; j++) out[j] += x[j];
}

/* np.add.reduce of n contiguous floats: `identity` plus the pairwise sums of blocks of 8192 (numpy's reduction
   buffer), block after block. */
float add_reduce(const float *a, int n, float identity, float zero) {
  float sum = identity;
  for (int i = 0; i < n; i += 8192) sum += pairwise_sum(a + i, n - i < 8192 ? n - i : 8192, 1, zero);
  return sum;
}

/* out[r] = np.add.reduce(x[r, :]) of a C-contiguous [rows, cols] array. */
API void row_sums_f32(int rows, int cols, const float *x, float identity, float zero, float *out) {
  for (int r = 0; r < rows; r++, x += cols) out[r] = add_reduce(x, cols, identity, zero);
}
