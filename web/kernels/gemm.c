/* sgemm: C = alpha * op(A) op(B) + beta * C over a batch, for any strides (so every transpose and every
   numpy view without copies).  Goto-style: B is packed into NR-wide panels, A into MR-tall panels, and a
   register-blocked MR x NR micro-kernel accumulates in SIMD registers. */
#include "kernels.h"

#ifdef __wasm__
enum { MR = 4, NR = 8, KC = 256, MC = 72, NC = 512 };
#else
enum { MR = 6, NR = 16, KC = 256, MC = 72, NC = 512 };   /* the host's micro-kernel: 8-float rows (AVX) */
#endif

/* The packing buffers come from the caller (a numpy array it keeps alive): a side module's static arrays
   would be written into the file as zeros. */
static float *packed_a, *packed_b;

/* Floats of scratch gemm_f32 needs, 16-byte aligned. */
API int gemm_scratch_floats(void) { return MC * KC + KC * NC; }

API void gemm_set_scratch(float *scratch) {
  packed_a = scratch;
  packed_b = scratch + MC * KC;
}

static inline int min(int a, int b) { return a < b ? a : b; }

/* Four 4-float vectors (v[k][i] = M[i][k] of a 4x4 block M read by columns) stored as its 4 rows, each at
   out + i * stride. */
static inline void store_transposed4(const v128_t *v, float *out, int stride) {
  v128_t t0 = wasm_i32x4_shuffle(v[0], v[1], 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(v[0], v[1], 2, 6, 3, 7);
  v128_t t2 = wasm_i32x4_shuffle(v[2], v[3], 0, 4, 1, 5), t3 = wasm_i32x4_shuffle(v[2], v[3], 2, 6, 3, 7);
  wasm_v128_store(out, wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5));
  wasm_v128_store(out + stride, wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7));
  wasm_v128_store(out + 2 * stride, wasm_i32x4_shuffle(t1, t3, 0, 1, 4, 5));
  wasm_v128_store(out + 3 * stride, wasm_i32x4_shuffle(t1, t3, 2, 3, 6, 7));
}

/* op(B)[p, j] = b[p * rs + j * cs], p < kc, j < nc  ->  panels of NR columns, kc rows each, zero-padded. */
static void pack_b(int kc, int nc, const float *b, int rs, int cs, float *out) {
  for (int j0 = 0; j0 < nc; j0 += NR, out += kc * NR) {
    int nr = min(NR, nc - j0);
    float *o = out;
    if (nr == NR && cs == 1) {
      for (int p = 0; p < kc; p++, o += NR) {
        const float *s = b + p * rs + j0;
        for (int j = 0; j < NR; j += 4) wasm_v128_store(o + j, wasm_v128_load(s + j));
      }
    } else if (nr == NR && rs == 1) {             /* columns contiguous: 4x4 SIMD transposes */
      int p = 0;
      for (; p + 4 <= kc; p += 4) {
        v128_t v[NR];
        for (int j = 0; j < NR; j++) v[j] = wasm_v128_load(b + (j0 + j) * cs + p);
        for (int j = 0; j < NR; j += 4) store_transposed4(v + j, o + p * NR + j, NR);
      }
      for (; p < kc; p++)
        for (int j = 0; j < NR; j++) o[p * NR + j] = b[(j0 + j) * cs + p];
    } else {
      for (int p = 0; p < kc; p++, o += NR) {
        const float *s = b + p * rs + j0 * cs;
        int j = 0;
        for (; j < nr; j++) o[j] = s[j * cs];
        for (; j < NR; j++) o[j] = 0.0f;
      }
    }
  }
}

/* op(A)[i, p] = a[i * rs + p * cs], i < mc, p < kc  ->  panels of MR rows, kc columns each, zero-padded. */
static void pack_a(int mc, int kc, const float *a, int rs, int cs, float *out) {
  for (int i0 = 0; i0 < mc; i0 += MR, out += kc * MR) {
    int mr = min(MR, mc - i0);
    float *o = out;
    if (mr == MR && rs == 1) {
      for (int p = 0; p < kc; p++, o += MR) __builtin_memcpy(o, a + i0 + p * cs, MR * sizeof(float));
    } else if (mr == MR && cs == 1) {             /* rows contiguous: 4x4 SIMD transposes, 4 rows at a time */
      const float *r = a + i0 * rs;
      int p = 0;
      for (; p + 4 <= kc; p += 4) {
        int i = 0;
        for (; i + 4 <= MR; i += 4) {
          const float *ri = r + i * rs + p;
          v128_t v[4] = {wasm_v128_load(ri), wasm_v128_load(ri + rs), wasm_v128_load(ri + 2 * rs),
                         wasm_v128_load(ri + 3 * rs)};
          store_transposed4(v, o + p * MR + i, MR);
        }
        for (; i < MR; i++)
          for (int q = p; q < p + 4; q++) o[q * MR + i] = r[i * rs + q];
      }
      for (; p < kc; p++)
        for (int i = 0; i < MR; i++) o[p * MR + i] = r[i * rs + p];
    } else {
      for (int p = 0; p < kc; p++, o += MR) {
        int i = 0;
        for (; i < mr; i++) o[i] = a[(i0 + i) * rs + p * cs];
        for (; i < MR; i++) o[i] = 0.0f;
      }
    }
  }
}

#ifdef __wasm__
#define ROW(r)                                                                          \
  { v128_t x = wasm_v128_load32_splat(a + r);                                           \
    c##r##0 = madd(x, b0, c##r##0); c##r##1 = madd(x, b1, c##r##1); }

/* C[0:mr, 0:nr] = alpha * (packed A panel) (packed B panel) + (overwrite ? 0 : C) */
static inline __attribute__((always_inline))
void micro(int kc, const float *a, const float *b, float *c, int ldc, int mr, int nr, v128_t alpha, int overwrite) {
  v128_t z = wasm_f32x4_splat(0.0f);
  v128_t c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  for (int p = 0; p < kc; p++, a += MR, b += NR) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
    ROW(0) ROW(1) ROW(2) ROW(3)
  }
  v128_t acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  if (mr == MR && nr == NR && overwrite) {
    for (int i = 0; i < MR; i++, c += ldc) {
      wasm_v128_store(c, wasm_f32x4_mul(alpha, acc[i][0]));
      wasm_v128_store(c + 4, wasm_f32x4_mul(alpha, acc[i][1]));
    }
    return;
  }
  if (mr == MR && nr == NR) {
    for (int i = 0; i < MR; i++, c += ldc) {
      wasm_v128_store(c, madd(alpha, acc[i][0], wasm_v128_load(c)));
      wasm_v128_store(c + 4, madd(alpha, acc[i][1], wasm_v128_load(c + 4)));
    }
    return;
  }
  float tile[MR * NR] __attribute__((aligned(16)));
  for (int i = 0; i < MR; i++) {
    wasm_v128_store(tile + i * NR, wasm_f32x4_mul(alpha, acc[i][0]));
    wasm_v128_store(tile + i * NR + 4, wasm_f32x4_mul(alpha, acc[i][1]));
  }
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) c[i * ldc + j] = tile[i * NR + j] + (overwrite ? 0.0f : c[i * ldc + j]);
}
#else
typedef float row_t __attribute__((vector_size(32)));   /* 8 floats: NR / VW of them span the tile's row */
enum { VW = 8 };

static inline row_t load_row(const float *p) { row_t v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void store_row(float *p, row_t v) { __builtin_memcpy(p, &v, sizeof v); }
static inline row_t madd_row(row_t a, row_t b, row_t c) {
#pragma clang fp contract(fast)
  return a * b + c;
}

/* C[0:mr, 0:nr] = alpha * (packed A panel) (packed B panel) + (overwrite ? 0 : C) */
static inline __attribute__((always_inline))
void micro(int kc, const float *a, const float *b, float *c, int ldc, int mr, int nr, float alpha, int overwrite) {
  row_t acc[MR][NR / VW] = {{0}};
  for (int p = 0; p < kc; p++, a += MR, b += NR) {
    row_t bv[NR / VW];
    for (int j = 0; j < NR / VW; j++) bv[j] = load_row(b + j * VW);
    for (int i = 0; i < MR; i++) {
      float ai = a[i];
      row_t x = {ai, ai, ai, ai, ai, ai, ai, ai};
      for (int j = 0; j < NR / VW; j++) acc[i][j] = madd_row(x, bv[j], acc[i][j]);
    }
  }
  row_t va = {alpha, alpha, alpha, alpha, alpha, alpha, alpha, alpha};
  if (mr == MR && nr == NR) {
    for (int i = 0; i < MR; i++, c += ldc)
      for (int j = 0; j < NR / VW; j++)
        store_row(c + j * VW, overwrite ? va * acc[i][j] : madd_row(va, acc[i][j], load_row(c + j * VW)));
    return;
  }
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) {
      float v = alpha * acc[i][j / VW][j % VW];
      c[i * ldc + j] = v + (overwrite ? 0.0f : c[i * ldc + j]);
    }
}
#endif

static void scale(int m, int n, float beta, float *c, int ldc) {
  for (int i = 0; i < m; i++, c += ldc) {
    if (beta == 0.0f) for (int j = 0; j < n; j++) c[j] = 0.0f;   /* BLAS: beta 0 ignores what C held */
    else for (int j = 0; j < n; j++) c[j] *= beta;
  }
}

/* Few outputs from long rows: dot products of contiguous rows of A and columns of B, two by two, no packing. */
static void gemm_dots(int m, int n, int k, float alpha, const float *a, int rsa, const float *b, int csb,
                      float beta, float *c, int ldc) {
  for (int i = 0; i < m; i += 2) {
    const float *a0 = a + i * rsa, *a1 = i + 1 < m ? a0 + rsa : a0;
    for (int j = 0; j < n; j += 2) {
      const float *b0 = b + j * csb, *b1 = j + 1 < n ? b0 + csb : b0;
      v128_t s00 = wasm_f32x4_splat(0.0f), s01 = s00, s10 = s00, s11 = s00;
      int p = 0;
      for (; p + 4 <= k; p += 4) {
        v128_t x0 = wasm_v128_load(a0 + p), x1 = wasm_v128_load(a1 + p);
        v128_t y0 = wasm_v128_load(b0 + p), y1 = wasm_v128_load(b1 + p);
        s00 = madd(x0, y0, s00); s01 = madd(x0, y1, s01); s10 = madd(x1, y0, s10); s11 = madd(x1, y1, s11);
      }
      float d[4] = {0}, t[4];
      v128_t sums[4] = {s00, s01, s10, s11};
      for (int q = 0; q < 4; q++) {
        wasm_v128_store(t, sums[q]);
        d[q] = (t[0] + t[1]) + (t[2] + t[3]);
      }
      for (; p < k; p++) {
        d[0] += a0[p] * b0[p]; d[1] += a0[p] * b1[p]; d[2] += a1[p] * b0[p]; d[3] += a1[p] * b1[p];
      }
      for (int di = 0; di < 2 && i + di < m; di++)
        for (int dj = 0; dj < 2 && j + dj < n; dj++) {
          float *out = c + (i + di) * ldc + j + dj;
          *out = alpha * d[di * 2 + dj] + (beta == 0.0f ? 0.0f : beta * *out);
        }
    }
  }
}

/* Whether few outputs from long rows take gemm_dots: the 4x8 kernel's thresholds on every build, so that the same
   shapes take this path in the page and in CPython. */
static inline int takes_dots(int m, int n, int k, float alpha) {
  return m * n <= 16 * 8 && k >= 4 * m * n / 8 && alpha != 0.0f;
}

/* pa, pb: the packing buffers (MC * KC and KC * NC floats); dots: whether few outputs from long rows may take
   gemm_dots (decided on the whole product, so that a slice of it computes each output as the whole does). */
static void gemm1(int m, int n, int k, float alpha, const float *a, int rsa, int csa, const float *b, int rsb,
                  int csb, float beta, float *c, int ldc, float *pa, float *pb, int dots) {
  if (dots && csa == 1 && rsb == 1) {
    gemm_dots(m, n, k, alpha, a, rsa, b, csb, beta, c, ldc);
    return;
  }
  int overwrite = beta == 0.0f && k > 0;          /* BLAS: beta 0 ignores what C held */
  if (beta != 1.0f && !overwrite) scale(m, n, beta, c, ldc);
  if (alpha == 0.0f) {
    if (overwrite) scale(m, n, 0.0f, c, ldc);
    return;
  }
#ifdef __wasm__
  v128_t va = wasm_f32x4_splat(alpha);
#else
  float va = alpha;
#endif
  for (int jc = 0; jc < n; jc += NC) {
    int nc = min(NC, n - jc);
    for (int pc = 0; pc < k; pc += KC) {
      int kc = min(KC, k - pc);
      pack_b(kc, nc, b + pc * rsb + jc * csb, rsb, csb, pb);
      for (int ic = 0; ic < m; ic += MC) {
        int mc = min(MC, m - ic);
        pack_a(mc, kc, a + ic * rsa + pc * csa, rsa, csa, pa);
#ifdef __wasm__
        for (int ir = 0; ir < mc; ir += MR)      /* C row strips in order: short k writes C often */
          for (int jr = 0; jr < nc; jr += NR)
#else
        for (int jr = 0; jr < nc; jr += NR)      /* a B panel stays in L1 while A's panels stream from L2 */
          for (int ir = 0; ir < mc; ir += MR)
#endif
            micro(kc, pa + ir * kc, pb + jr * kc, c + (ic + ir) * ldc + jc + jr, ldc,
                  min(MR, mc - ir), min(NR, nc - jr), va, overwrite && pc == 0);
      }
    }
  }
}

/* For each of `batch` products (batch strides sa, sb, sc; 0 broadcasts):
   C[i, j] = alpha * sum_p A[i * rsa + p * csa] * B[p * rsb + j * csb] + beta * C[i * ldc + j]. */
API void gemm_f32(int batch, int m, int n, int k, float alpha, const float *a, int sa, int rsa, int csa,
                  const float *b, int sb, int rsb, int csb, float beta, float *c, int sc, int ldc) {
#ifdef __wasm_atomics__
  /* the threaded module's threads may each run a program at once: packing buffers of the thread's own */
  float scratch[MC * KC + KC * NC] __attribute__((aligned(16)));
  float *pa = scratch, *pb = scratch + MC * KC;
#else
  float *pa = packed_a, *pb = packed_b;
#endif
  int dots = takes_dots(m, n, k, alpha);
  for (int t = 0; t < batch; t++)
    gemm1(m, n, k, alpha, a + t * sa, rsa, csa, b + t * sb, rsb, csb, beta, c + t * sc, ldc, pa, pb, dots);
}

/* gemm_f32's part `part` of `parts` (for the threaded module: any thread may take any part), with its packing
   buffers on the thread's stack: whole products when the batch has one per part, else C's columns in NR-wide
   panels (its rows in MR-tall ones when C is taller than wide), so that every output is computed as by gemm_f32. */
API void gemm_f32_part(int part, int parts, int batch, int m, int n, int k, float alpha, const float *a, int sa,
                       int rsa, int csa, const float *b, int sb, int rsb, int csb, float beta, float *c, int sc,
                       int ldc) {
  float scratch[MC * KC + KC * NC] __attribute__((aligned(16)));
  float *pa = scratch, *pb = scratch + MC * KC;
  int dots = takes_dots(m, n, k, alpha);
  if (batch >= parts) {
    for (int t = batch * part / parts; t < batch * (part + 1) / parts; t++)
      gemm1(m, n, k, alpha, a + t * sa, rsa, csa, b + t * sb, rsb, csb, beta, c + t * sc, ldc, pa, pb, dots);
    return;
  }
  int by_rows = m > n, unit = by_rows ? MR : NR, units = ((by_rows ? m : n) + unit - 1) / unit;
  int lo = units * part / parts * unit, hi = min(units * (part + 1) / parts * unit, by_rows ? m : n);
  for (int t = 0; t < batch && lo < hi; t++) {
    if (by_rows)
      gemm1(hi - lo, n, k, alpha, a + t * sa + lo * rsa, rsa, csa, b + t * sb, rsb, csb, beta,
            c + t * sc + lo * ldc, ldc, pa, pb, dots);
    else
      gemm1(m, hi - lo, k, alpha, a + t * sa, rsa, csa, b + t * sb + lo * csb, rsb, csb, beta, c + t * sc + lo,
            ldc, pa, pb, dots);
  }
}
