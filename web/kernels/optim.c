/* Optimizer updates in one pass, in place, with numpy's float32 operation order (so results are bit-equal
   to the numpy kernels in pysrc/onnxtrain/ops/training.py: the build turns off FMA contraction). */
#include "kernels.h"

#define V(x) wasm_f32x4_splat(x)
#define ADD wasm_f32x4_add
#define SUB wasm_f32x4_sub
#define MUL wasm_f32x4_mul
#define DIV wasm_f32x4_div

/* On the host only the scalar loops run: the compiler vectorizes them to its widest vectors (AVX: 8 floats), with
   the same results, as elementwise operations in the same order. */

/* mode 0: decay first, bias correction through ac, bc (torch.optim.AdamW); mode 1: corrected lr_c, then decay
   with lr_wd = lr * wd (Hugging Face).  ac = bc = 1 and lr_c = lr without bias correction. */
static void adamw1(int n, float *w, const float *g, float *m, float *v, int mode, float lr, float a, float b,
                   float one_a, float one_b, float eps, float wd, float ac, float bc, float lr_c, float lr_wd) {
  int i = 0;
  if (mode == 0) {
#ifdef __wasm__
    for (; i + 4 <= n; i += 4) {
      v128_t wi = wasm_v128_load(w + i), gi = wasm_v128_load(g + i);
      wi = SUB(wi, MUL(MUL(wi, V(lr)), V(wd)));
      v128_t mi = ADD(MUL(wasm_v128_load(m + i), V(a)), MUL(V(one_a), gi));
      v128_t vi = ADD(MUL(wasm_v128_load(v + i), V(b)), MUL(MUL(V(one_b), gi), gi));
      v128_t d = MUL(ADD(wasm_f32x4_sqrt(DIV(vi, V(bc))), V(eps)), V(ac));
      wasm_v128_store(w + i, SUB(wi, DIV(MUL(V(lr), mi), d)));
      wasm_v128_store(m + i, mi);
      wasm_v128_store(v + i, vi);
    }
#endif
    for (; i < n; i++) {
      float wi = w[i] - (w[i] * lr) * wd;
      m[i] = m[i] * a + one_a * g[i];
      v[i] = v[i] * b + (one_b * g[i]) * g[i];
      w[i] = wi - (lr * m[i]) / ((__builtin_sqrtf(v[i] / bc) + eps) * ac);
    }
  } else {
#ifdef __wasm__
    for (; i + 4 <= n; i += 4) {
      v128_t gi = wasm_v128_load(g + i);
      v128_t mi = ADD(MUL(wasm_v128_load(m + i), V(a)), MUL(V(one_a), gi));
      v128_t vi = ADD(MUL(wasm_v128_load(v + i), V(b)), MUL(MUL(V(one_b), gi), gi));
      v128_t wi = SUB(wasm_v128_load(w + i), DIV(MUL(V(lr_c), mi), ADD(wasm_f32x4_sqrt(vi), V(eps))));
      wasm_v128_store(w + i, SUB(wi, MUL(V(lr_wd), wi)));
      wasm_v128_store(m + i, mi);
      wasm_v128_store(v + i, vi);
    }
#endif
    for (; i < n; i++) {
      m[i] = m[i] * a + one_a * g[i];
      v[i] = v[i] * b + (one_b * g[i]) * g[i];
      float wi = w[i] - (lr_c * m[i]) / (__builtin_sqrtf(v[i]) + eps);
      w[i] = wi - lr_wd * wi;
    }
  }
}

/* AdamW over `count` tensors: table holds (size, weight, gradient, moment 1, moment 2) addresses per tensor;
   s: lr, alpha, beta, 1 - alpha, 1 - beta, epsilon, weight decay, ac, bc, lr_c, lr * weight decay. */
API void adamw_f32(int count, const addr_t *table, int mode, const float *s) {
  for (int t = 0; t < count; t++, table += 5)
    adamw1(table[0], (float *)table[1], (const float *)table[2], (float *)table[3], (float *)table[4], mode,
           s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10]);
}

static void sgd1(int n, float *w, const float *g, float neg_lr) {
  int i = 0;
#ifdef __wasm__
  for (; i + 4 <= n; i += 4)
    wasm_v128_store(w + i, ADD(wasm_v128_load(w + i), MUL(V(neg_lr), wasm_v128_load(g + i))));
#endif
  for (; i < n; i++) w[i] += neg_lr * g[i];
}

/* w += neg_lr * g over `count` tensors: table holds (size, weight, gradient) addresses per tensor. */
API void sgd_f32(int count, const addr_t *table, float neg_lr) {
  for (int t = 0; t < count; t++, table += 3) sgd1(table[0], (float *)table[1], (const float *)table[2], neg_lr);
}

/* Elements [*lo, *hi) of n that part `part` of `parts` updates: whole vectors of 4. */
static void slice4(int n, int part, int parts, int *lo, int *hi) {
  int units = (n + 3) / 4;
  *lo = units * part / parts * 4;
  *hi = units * (part + 1) / parts * 4;
  if (*hi > n) *hi = n;
}

/* adamw_f32 and sgd_f32 over part `part` of `parts` of every tensor's elements. */
API void adamw_f32_part(int part, int parts, int count, const addr_t *table, int mode, const float *s) {
  for (int t = 0, lo, hi; t < count; t++, table += 5) {
    slice4(table[0], part, parts, &lo, &hi);
    if (lo < hi)
      adamw1(hi - lo, (float *)table[1] + lo, (const float *)table[2] + lo, (float *)table[3] + lo,
             (float *)table[4] + lo, mode, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10]);
  }
}

API void sgd_f32_part(int part, int parts, int count, const addr_t *table, float neg_lr) {
  for (int t = 0, lo, hi; t < count; t++, table += 3) {
    slice4(table[0], part, parts, &lo, &hi);
    if (lo < hi) sgd1(hi - lo, (float *)table[1] + lo, (const float *)table[2] + lo, neg_lr);
  }
}
