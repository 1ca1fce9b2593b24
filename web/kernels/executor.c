/* The program executor: a whole compiled program (a training step, an optimizer step) in one call.

   A program is int32 words, one record after another: [op, n, w_1 .. w_n].  The words of a record are buffer
   indices (into `buffers`, a table of pointers; -1 for an absent optional one), then integer parameters, floats
   as their float32 bits.  Each op calls the same kernels, in the same order, as the numpy provider's ops (the
   modules of pysrc/onnxtrain/ops, through ops/simd.py), so that results are its bits; softmax cross-entropy's exp
   and log and AdamW's powers are this build's own (mathlib.c).  The op ids are the positions in OP_NAMES, which the
   host reads at load (executor_op_count, executor_op_name): pysrc/onnxtrain/wasm/lowering.py writes the records. */
#include "program.h"

#define NAME(name) #name,
static const char *const OP_NAMES[] = {OPS(NAME)};

API int executor_op_count(void) { return OP_COUNT; }

API const char *executor_op_name(int op) { return op >= 0 && op < OP_COUNT ? OP_NAMES[op] : 0; }

static inline float as_float(int w) {
  float f;
  __builtin_memcpy(&f, &w, 4);
  return f;
}

#define F32(i) ((float *)buffers[w[i]])
#define OPT_F32(i) (w[i] < 0 ? (float *)0 : (float *)buffers[w[i]])
#define I64(i) ((long long *)buffers[w[i]])
#define BYTES(i) ((unsigned char *)buffers[w[i]])

/* -- element-wise over strided, broadcast operands ------------------------------------------------------------ */

enum { S_COPY, S_ADD, S_SUB, S_MUL, S_DIV, MAX_RANK = 8 };

/* One row of `inner` elements: po[j] = pa[j * ia] op pb[j * ib], with the common strides (1 and 1, 1 and 0), in
   place or not, as loops of their own, which the compiler vectorizes. */
#define ROW(EXPR)                                                                                      \
  do {                                                                                                 \
    float x = 0.0f, y = 0.0f;                                                                          \
    int j;                                                                                             \
    if (po == pa && ia == 1 && ib == 0)                                                                \
      for (j = 0, y = pb[0]; j < inner; j++) { x = po[j]; po[j] = EXPR; }                             \
    else if (po == pa && ia == 1 && ib == 1)                                                           \
      for (j = 0; j < inner; j++) { x = po[j]; y = pb[j]; po[j] = EXPR; }                              \
    else if (ia == 1 && ib == 1)                                                                       \
      for (j = 0; j < inner; j++) { x = pa[j]; y = pb[j]; po[j] = EXPR; }                              \
    else if (ia == 1 && ib == 0)                                                                       \
      for (j = 0, y = pb[0]; j < inner; j++) { x = pa[j]; po[j] = EXPR; }                             \
    else                                                                                               \
      for (j = 0; j < inner; j++) { x = pa[j * ia]; y = pb[j * ib]; po[j] = EXPR; }                    \
    (void)x;                                                                                           \
    (void)y;                                                                                           \
  } while (0)

/* out (contiguous, `shape`) = a op b, a and b read at element strides sa, sb (0 broadcasts).  Each element is one
   IEEE operation, as numpy's; out may be a when a is contiguous (in place). */
static void strided(int kind, int rank, const int *shape, float *out, const float *a, const int *sa,
                    const float *b, const int *sb) {
  static const float zero = 0.0f;
  int index[MAX_RANK] = {0};
  int inner = rank ? shape[rank - 1] : 1, ia = rank ? sa[rank - 1] : 0, ib = rank ? sb[rank - 1] : 0;
  long long total = 1;
  for (int d = 0; d < rank; d++) total *= shape[d];
  if (total == 0) return;
  if (!b) {
    b = &zero;
    ib = 0;
  }
  for (long long done = 0; done < total; done += inner) {
    long long oa = 0, ob = 0;
    for (int d = 0; d < rank - 1; d++) {
      oa += (long long)index[d] * sa[d];
      ob += (long long)index[d] * (sb ? sb[d] : 0);
    }
    const float *pa = a + oa, *pb = b + (b == &zero ? 0 : ob);
    float *po = out + done;
    switch (kind) {
      case S_COPY: ROW(x); break;
      case S_ADD: ROW(x + y); break;
      case S_SUB: ROW(x - y); break;
      case S_MUL: ROW(x * y); break;
      default: ROW(x / y); break;
    }
    for (int d = rank - 2; d >= 0; d--) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

/* -- softmax cross-entropy --------------------------------------------------------------------------------------- */

/* Scores [N, C] with int64 labels [N]: what the numpy kernels do (ops/loss.py: log_softmax and _nll; with neither
   weights nor ignore_index, the fused path of ops/simd.py, which is the same arithmetic), with this build's exp
   and log in place of numpy's. */
typedef struct {
  int rows, cols, reduction, has_weights, has_ignore;
  long long ignore;
  float identity, zero;
} ce_shape;

enum { R_NONE, R_SUM, R_MEAN };

/* The label of row r made safe (ignored -> 0), its weight (0 when ignored, 1 without weights) in *weight; -1 for
   a label outside [0, C) that is not ignored. */
static inline int ce_label(const ce_shape *s, const long long *labels, const float *weights, int r, float *weight) {
  long long label = labels[r];
  if (s->has_ignore && label == s->ignore) {
    *weight = 0.0f;
    return 0;
  }
  if (label < 0 || label >= s->cols) return -1;
  *weight = weights ? weights[label] : 1.0f;
  return (int)label;
}

/* "mean"'s denominator: the rows' summed weights (numpy's pairwise order), or the row count. */
static float ce_total_weight(const ce_shape *s, const float *row_weights) {
  if (!s->has_weights && !s->has_ignore) return (float)s->rows;
  return s->identity + pairwise_sum(row_weights, s->rows, 1, s->zero);
}

/* loss (a scalar, or [N] for "none") and log_prob [N, C]; work: 2 N + C floats.  1 on a bad label. */
static int softmax_ce(const ce_shape *s, const float *x, const long long *labels, const float *weights,
                      float *loss, float *log_prob, float *work) {
  int rows = s->rows, c = s->cols, weighted = s->has_weights || s->has_ignore;
  float *picks = work, *row_weights = work + rows, *e = work + 2 * rows;
  for (int r = 0; r < rows; r++)
    if (ce_label(s, labels, weights, r, row_weights + r) < 0) return 1;
  for (int r = 0; r < rows; r++, x += c, log_prob += c) {
    float m = x[0];
    for (int j = 1; j < c; j++) m = (x[j] > m || x[j] != x[j]) && m == m ? x[j] : m;   /* np.maximum: NaN wins */
    for (int j = 0; j < c; j++) log_prob[j] = x[j] - m;
    for (int j = 0; j < c; j++) e[j] = exp_f32_1(log_prob[j]);
    float log_sum = log_f32_1(s->identity + pairwise_sum(e, c, 1, s->zero));
    for (int j = 0; j < c; j++) log_prob[j] -= log_sum;
    float w_r;
    int label = ce_label(s, labels, weights, r, &w_r);
    picks[r] = -log_prob[label];
    if (weighted) picks[r] *= w_r;
  }
  if (s->reduction == R_NONE) {
    for (int r = 0; r < rows; r++) loss[r] = picks[r];
    return 0;
  }
  float total = s->identity + pairwise_sum(picks, rows, 1, s->zero);
  if (s->reduction == R_MEAN) {
    float denom = ce_total_weight(s, row_weights);
    if (denom != 0.0f) total = total / denom;        /* a zero total weight keeps the (zero) sum */
  }
  *loss = total;
  return 0;
}

/* d loss / d scores [N, C] from log_prob and dY (a scalar, or [N] for "none"); work: N floats.  1 on a bad label. */
static int softmax_ce_grad(const ce_shape *s, const float *dy, const float *log_prob, const long long *labels,
                           const float *weights, float *dx, float *work) {
  int rows = s->rows, c = s->cols, weighted = s->has_weights || s->has_ignore;
  float *row_weights = work;
  for (int r = 0; r < rows; r++)
    if (ce_label(s, labels, weights, r, row_weights + r) < 0) return 1;
  float scale = dy[0];
  if (s->reduction == R_MEAN) {
    float denom = ce_total_weight(s, row_weights);
    if (denom != 0.0f) scale = scale / denom;
  }
  for (int r = 0; r < rows; r++, log_prob += c, dx += c) {
    float w_r;
    int label = ce_label(s, labels, weights, r, &w_r);
    float row_scale = s->reduction == R_NONE ? dy[r] : scale;
    float factor = weighted ? w_r * row_scale : row_scale;
    for (int j = 0; j < c; j++) dx[j] = exp_f32_1(log_prob[j]);
    dx[label] = dx[label] - 1.0f;
    for (int j = 0; j < c; j++) dx[j] *= factor;
  }
  return 0;
}

/* -- one-operand element-wise ops: one IEEE operation per element as numpy's ufuncs, and this build's exp ------ */

enum { U_NEG, U_SQRT, U_RECIPROCAL, U_EXP, U_TANH };

static void unary(int kind, int n, const float *x, float *y) {
  switch (kind) {
    case U_NEG: for (int i = 0; i < n; i++) y[i] = -x[i]; break;
    case U_SQRT: for (int i = 0; i < n; i++) y[i] = __builtin_sqrtf(x[i]); break;
    case U_RECIPROCAL: for (int i = 0; i < n; i++) y[i] = 1.0f / x[i]; break;
    case U_EXP: for (int i = 0; i < n; i++) y[i] = exp_f32_1(x[i]); break;   /* mathlib.c: not numpy's bits */
    default: for (int i = 0; i < n; i++) y[i] = tanh_f32_1(x[i]); break;     /* the same */
  }
}

/* -- strided copies of any element size, and casts to float32 --------------------------------------------- */

/* out[out_offset + sum(i_d * so_d)] = x[in_offset + sum(i_d * si_d)] over the index space `shape`, elements of
   `size` bytes (1, 2, 4 or 8), offsets and strides in elements. */
static void copy_strided(int size, int rank, long long in_offset, long long out_offset, const int *shape,
                         const int *si, const int *so, const unsigned char *x, unsigned char *out) {
  int index[MAX_RANK] = {0};
  long long total = 1;
  for (int d = 0; d < rank; d++) total *= shape[d];
  if (total == 0) return;
  int inner = rank ? shape[rank - 1] : 1, ia = rank ? si[rank - 1] : 0, ib = rank ? so[rank - 1] : 0;
  for (long long done = 0; done < total; done += inner) {
    long long a = in_offset, b = out_offset;
    for (int d = 0; d < rank - 1; d++) {
      a += (long long)index[d] * si[d];
      b += (long long)index[d] * so[d];
    }
    switch (size) {
      case 1: for (int j = 0; j < inner; j++) out[b + j * ib] = x[a + j * ia]; break;
      case 2: {
        const unsigned short *px = (const unsigned short *)x + a;
        unsigned short *po = (unsigned short *)out + b;
        for (int j = 0; j < inner; j++) po[j * ib] = px[j * ia];
        break;
      }
      case 4: {
        const unsigned *px = (const unsigned *)x + a;
        unsigned *po = (unsigned *)out + b;
        if (ia == 1 && ib == 1) for (int j = 0; j < inner; j++) po[j] = px[j];
        else for (int j = 0; j < inner; j++) po[j * ib] = px[j * ia];
        break;
      }
      default: {
        const unsigned long long *px = (const unsigned long long *)x + a;
        unsigned long long *po = (unsigned long long *)out + b;
        for (int j = 0; j < inner; j++) po[j * ib] = px[j * ia];
        break;
      }
    }
    for (int d = rank - 2; d >= 0; d--) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

enum { C_U8, C_I8, C_I32, C_I64, C_BOOL };

/* y = x as float32 (numpy's astype: exact for the small integers, round to nearest for the large). */
static void cast_f32(int from, int n, const void *x, float *y) {
  switch (from) {
    case C_U8: for (int i = 0; i < n; i++) y[i] = (float)((const unsigned char *)x)[i]; break;
    case C_I8: for (int i = 0; i < n; i++) y[i] = (float)((const signed char *)x)[i]; break;
    case C_I32: for (int i = 0; i < n; i++) y[i] = (float)((const int *)x)[i]; break;
    case C_I64: for (int i = 0; i < n; i++) y[i] = (float)((const long long *)x)[i]; break;
    default: for (int i = 0; i < n; i++) y[i] = ((const unsigned char *)x)[i] ? 1.0f : 0.0f; break;
  }
}

/* -- comparisons, logic, selection: strided, broadcast operands into a contiguous output ------------------- */

/* The offsets of a, b and c (element strides sa, sb, sc) at each row of the last dim of `shape`, in order:
   the body (the last arguments) runs with oa, ob, oc and po (the output's offset), ia, ib, ic (the last dim's strides) and inner. */
#define OVER_ROWS(rank, shape, sa, sb, sc, ...)                                                            \
  do {                                                                                                     \
    int index_[MAX_RANK] = {0};                                                                            \
    long long total_ = 1;                                                                                  \
    for (int d = 0; d < (rank); d++) total_ *= (shape)[d];                                                 \
    int inner = (rank) ? (shape)[(rank) - 1] : 1;                                                          \
    int ia = (rank) ? (sa)[(rank) - 1] : 0, ib = (rank) ? (sb)[(rank) - 1] : 0;                            \
    int ic = (rank) ? (sc)[(rank) - 1] : 0;                                                                \
    for (long long po = 0; po < total_; po += inner) {                                                     \
      long long oa = 0, ob = 0, oc = 0;                                                                    \
      for (int d = 0; d < (rank) - 1; d++) {                                                               \
        oa += (long long)index_[d] * (sa)[d];                                                              \
        ob += (long long)index_[d] * (sb)[d];                                                              \
        oc += (long long)index_[d] * (sc)[d];                                                              \
      }                                                                                                    \
      (void)oc;                                                                                            \
      (void)ic;                                                                                            \
      __VA_ARGS__;                                                                                         \
      for (int d = (rank) - 2; d >= 0; d--) {                                                              \
        if (++index_[d] < (shape)[d]) break;                                                               \
        index_[d] = 0;                                                                                     \
      }                                                                                                    \
    }                                                                                                      \
  } while (0)

enum { K_LESS, K_GREATER, K_EQUAL, K_LESS_EQUAL, K_GREATER_EQUAL };

/* One row of `inner` results: o[j] = EXPR of x = pa[j * ia], y = pb[j * ib], with the common strides as loops of
   their own (which the compiler vectorizes). */
#define ROW2(T, EXPR)                                                                                    \
  do {                                                                                                   \
    if (ia == 1 && ib == 1)                                                                              \
      for (int j = 0; j < inner; j++) { T x = pa[j], y = pb[j]; o[j] = (unsigned char)(EXPR); }          \
    else if (ia == 1 && ib == 0)                                                                         \
      for (int j = 0; j < inner; j++) { T x = pa[j], y = pb[0]; o[j] = (unsigned char)(EXPR); }          \
    else                                                                                                 \
      for (int j = 0; j < inner; j++) { T x = pa[j * ia], y = pb[j * ib]; o[j] = (unsigned char)(EXPR); } \
  } while (0)

/* out (bool bytes) = a kind b over float32, IEEE comparisons (NaN compares false, -0 equals +0). */
static void compare(int kind, int rank, const int *shape, const float *a, const int *sa, const float *b,
                    const int *sb, unsigned char *out) {
  OVER_ROWS(rank, shape, sa, sb, sb, {
    const float *pa = a + oa, *pb = b + ob;
    unsigned char *o = out + po;
    switch (kind) {
      case K_LESS: ROW2(float, x < y); break;
      case K_GREATER: ROW2(float, x > y); break;
      case K_EQUAL: ROW2(float, x == y); break;
      case K_LESS_EQUAL: ROW2(float, x <= y); break;
      default: ROW2(float, x >= y); break;
    }
  });
}

enum { L_AND, L_OR, L_XOR, L_NOT };

/* out (bool bytes) = a kind b (b absent for NOT). */
static void logical(int kind, int rank, const int *shape, const unsigned char *a, const int *sa,
                    const unsigned char *b, const int *sb, unsigned char *out) {
  static const unsigned char zero = 0;
  OVER_ROWS(rank, shape, sa, sb, sb, {
    const unsigned char *pa = a + oa, *pb = b ? b + ob : &zero;
    unsigned char *o = out + po;
    if (!b) ib = 0;
    switch (kind) {
      case L_AND: ROW2(unsigned char, (x != 0) & (y != 0)); break;
      case L_OR: ROW2(unsigned char, (x != 0) | (y != 0)); break;
      case L_XOR: ROW2(unsigned char, (x != 0) ^ (y != 0)); break;
      default: ROW2(unsigned char, (x == 0) + 0 * y); break;
    }
  });
}

/* out = cond ? x : y, elements of `size` bytes (4 or 8), cond bool bytes. */
#define WHERE_ROWS(T)                                                                                      \
  OVER_ROWS(rank, shape, sc, sx, sy, {                                                                     \
    const unsigned char *c = cond + oa;                                                                    \
    const T *px = (const T *)x + ob, *py = (const T *)y + oc;                                              \
    T *o = (T *)out + po;                                                                                  \
    for (int j = 0; j < inner; j++) o[j] = c[j * ia] ? px[j * ib] : py[j * ic];                            \
  })

static void where(int size, int rank, const int *shape, const unsigned char *cond, const int *sc,
                  const unsigned char *x, const int *sx, const unsigned char *y, const int *sy, unsigned char *out) {
  if (size == 4)
    WHERE_ROWS(unsigned);
  else
    WHERE_ROWS(unsigned long long);
}

/* out = np.maximum(a, b) (or np.minimum) over float32: a where a > b (a < b) or a is NaN, else b (so b on ties of
   -0 and +0, and NaN when either is). */
static void extremum(int is_min, int rank, const int *shape, const float *a, const int *sa, const float *b,
                     const int *sb, float *out) {
  OVER_ROWS(rank, shape, sa, sb, sb, {
    const float *pa = a + oa, *pb = b + ob;
    float *o = out + po;
    for (int j = 0; j < inner; j++) {
      float x = pa[j * ia], y = pb[j * ib];
      o[j] = (is_min ? x < y : x > y) || x != x ? x : y;
    }
  });
}

/* out[o, i, :] = data[o, indices[i] (negative: from the end), :] for data [outer, dim, inner] of `size`-byte
   elements: 0, or 1 on an index outside [-dim, dim) (nothing written then). */
static int gather(int size, int outer, int dim, int inner, int n, const unsigned char *data, const long long *indices,
                  unsigned char *out) {
  for (int i = 0; i < n; i++)
    if (indices[i] < -(long long)dim || indices[i] >= dim) return 1;
  long long row = (long long)inner * size;
  for (int o = 0; o < outer; o++)
    for (int i = 0; i < n; i++) {
      long long at = indices[i] < 0 ? indices[i] + dim : indices[i];
      const unsigned char *from = data + ((long long)o * dim + at) * row;
      unsigned char *to = out + ((long long)o * n + i) * row;
      for (long long t = 0; t < row; t++) to[t] = from[t];
    }
  return 0;
}

/* x^t for float32 x and an integer t: |x|^t in double-double (mathlib.c's pow_f64_int) rounded once to float32,
   so the correctly rounded power (numpy's float32 power is its SIMD or libm powf, within an ulp of it); zeros,
   infinities and NaN as C's pow. */
static float powi_f32(float x, int t) {
  int odd = t & 1;
  if (t == 0) return 1.0f;
  if (x != x) return x;
  float ax = x < 0.0f ? -x : x;
  float r;
  if (ax == 0.0f) r = t > 0 ? 0.0f : 1.0f / 0.0f;
  else if (ax - ax != 0.0f) r = t > 0 ? ax : 0.0f;      /* infinite */
  else r = (float)pow_f64_int((double)ax, t);
  return odd && __builtin_signbit(x) ? -r : r;
}

/* GELU and its gradient as ops/elementwise.py and ops/fused.py compute them: in double (math.erf, np.exp there;
   erf_f64 and exp_f64 here, within a few 1e-16 of them), rounded once to float32, so numpy's bits except where a
   result lies within about 1e-15 of a float32 midpoint. */
static const double SQRT2 = 1.4142135623730951, SQRT_2PI = 2.5066282746310002;

static float gelu_1(float xf) {
  double x = xf;
  return (float)(0.5 * x * (1.0 + erf_f64(x / SQRT2)));
}

static float gelu_grad_1(float dy, float xf) {
  double x = xf;
  double g = 0.5 * (1.0 + erf_f64(x / SQRT2)) + x * exp_f64(-0.5 * x * x) / SQRT_2PI;
  return (float)((double)dy * g);
}

/* -- training ops ------------------------------------------------------------------------------------------------ */

static inline int flag_set(void *const *buffers, int index) {
  return index < 0 || *(const unsigned char *)buffers[index] != 0;
}

static inline void fill_bytes(unsigned char *p, int n, int value) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)value;
}

/* -- the loop ---------------------------------------------------------------------------------------------------- */

#define WINDOW(i) w[i], w[i + 1], w[i + 2], w[i + 3], w[i + 4], w[i + 5], w[i + 6], w[i + 7], w[i + 8], w[i + 9], \
                  w[i + 10], w[i + 11]

/* One record: 0, or 1 when its kernel reports bad input (a label or an index out of range). */
int run_record(int op, int n, const int *w, void *const *buffers) {
  switch (op) {
    case OP_copy: {          /* [src, dst, nbytes] */
      const unsigned char *src = BYTES(0);
      unsigned char *dst = BYTES(1);
      if (src != dst) for (int i = 0; i < w[2]; i++) dst[i] = src[i];
      return 0;
    }
    case OP_fill:            /* [dst, nbytes, byte] */
      fill_bytes(BYTES(0), w[1], w[2]);
      return 0;
    case OP_strided: {       /* [a, b, out, kind, rank, shape.., a strides.., b strides..] */
      int rank = w[4];
      strided(w[3], rank, w + 5, F32(2), F32(0), w + 5 + rank, OPT_F32(1), w + 5 + 2 * rank);
      return 0;
    }
    case OP_gemm:            /* [a, b, c, count, m, n, k, alpha, oa, sa, rsa, csa, ob, sb, rsb, csb, beta, oc, sc,
                                 ldc] */
      gemm_f32(w[3], w[4], w[5], w[6], as_float(w[7]), F32(0) + w[8], w[9], w[10], w[11], F32(1) + w[12], w[13],
               w[14], w[15], as_float(w[16]), F32(2) + w[17], w[18], w[19]);
      return 0;
    case OP_relu: relu_f32(w[2], F32(0), F32(1)); return 0;                       /* [x, y, n] */
    case OP_relu_grad: relu_grad_f32(w[3], F32(0), F32(1), F32(2)); return 0;     /* [dy, x, dx, n] */
    case OP_sigmoid: sigmoid_f32(w[2], F32(0), F32(1)); return 0;
    case OP_sigmoid_grad: sigmoid_grad_f32(w[3], F32(0), F32(1), F32(2)); return 0;
    case OP_softmax: softmax_f32(w[2], w[3], F32(0), F32(1)); return 0;           /* [x, y, rows, cols] */
    case OP_softmax_grad: softmax_grad_f32(w[3], w[4], F32(0), F32(1), F32(2)); return 0;
    case OP_column_sums: column_sums_f32(w[2], w[3], F32(0), as_float(w[4]), F32(1)); return 0;
    case OP_row_sums:        /* [x, out, rows, cols, identity, zero] */
      softmax_ce_sums_f32(w[2], w[3], F32(0), as_float(w[4]), as_float(w[5]), F32(1));
      return 0;
    case OP_plane_sums: plane_sums_f32(w[2], w[3], F32(0), F32(1)); return 0;     /* [x, out, planes, size] */
    case OP_im2col: im2col_f32(w[2], WINDOW(3), F32(0), F32(1)); return 0;        /* [x, cols, planes, window] */
    case OP_col2im: col2im_f32(w[2], WINDOW(3), F32(0), F32(1)); return 0;        /* [cols, x, planes, window] */
    case OP_maxpool:         /* [x, y, indices, planes, window] */
      maxpool_f32(w[3], WINDOW(4), F32(0), F32(1), w[2] < 0 ? 0 : I64(2));
      return 0;
    case OP_maxpool_grad:    /* [dy, indices, dx, n_out, n_in] */
      return maxpool_grad_f32(w[3], w[4], F32(0), I64(1), F32(2)) != 0;
    case OP_depthwise:       /* [x, filters, bias, y, n, c, window] */
      depthwise_f32(w[4], w[5], WINDOW(6), F32(0), F32(1), OPT_F32(2), F32(3));
      return 0;
    case OP_depthwise_grad:  /* [dy, x, filters, dx, dfilters, n, c, window] */
      depthwise_grad_f32(w[5], w[6], WINDOW(7), F32(0), F32(1), F32(2), OPT_F32(3), OPT_F32(4));
      return 0;
    case OP_softmax_ce:      /* [scores, labels, weights, loss, log_prob, work, rows, cols, reduction, has_ignore,
                                 ignore lo, ignore hi, identity, zero] */
    case OP_softmax_ce_grad: {  /* [dy, log_prob, labels, weights, dx, work, the same parameters] */
      ce_shape s = {w[6], w[7], w[8], (op == OP_softmax_ce ? w[2] : w[3]) >= 0, w[9],
                    (long long)(((unsigned long long)(unsigned)w[11] << 32) | (unsigned)w[10]),
                    as_float(w[12]), as_float(w[13])};
      if (op == OP_softmax_ce) return softmax_ce(&s, F32(0), I64(1), OPT_F32(2), F32(3), F32(4), F32(5));
      return softmax_ce_grad(&s, F32(0), F32(1), I64(2), OPT_F32(3), F32(4), F32(5));
    }
    case OP_accumulate: {    /* [buffer, value, overwrite flag, updated flag, n] */
      float *acc = F32(0);
      const float *value = F32(1);
      if (w[2] >= 0 && flag_set(buffers, w[2])) {
        if (acc != value) for (int i = 0; i < w[4]; i++) acc[i] = value[i];
      } else {
        for (int i = 0; i < w[4]; i++) acc[i] += value[i];
      }
      if (w[3] >= 0) fill_bytes(BYTES(3), 1, 1);
      return 0;
    }
    case OP_adamw: {         /* [lr, step, update signal, weights.., gradients.., moments 1.., moments 2..,
                                 updated flag, then count, flag bytes, mode, correct_bias, alpha, beta, epsilon,
                                 weight decay, sizes..]: n = 12 + 5 count */
      int count = (n - 12) / 5;
      const int *p = w + 4 + 4 * count;
      int go = flag_set(buffers, w[2]);
      if (w[3 + 4 * count] >= 0) fill_bytes(BYTES(3 + 4 * count), p[1], go);
      if (!go) return 0;
      float lr = *F32(0), a = as_float(p[4]), b = as_float(p[5]), eps = as_float(p[6]), wd = as_float(p[7]);
      float one = 1.0f, one_a = one - a, one_b = one - b, ac = one, bc = one, lr_c = lr;
      if (p[3] == 1) {       /* ops/optimizers.py: 1 - float32(float(a) ** t), then lr * (sqrt(bc) / ac) */
        long long t = *I64(1);
        ac = one - (float)pow_f64_int((double)a, t);
        bc = one - (float)pow_f64_int((double)b, t);
        lr_c = lr * (__builtin_sqrtf(bc) / ac);
      }
      float scalars[11] = {lr, a, b, one_a, one_b, eps, wd, ac, bc, lr_c, lr * wd};
      for (int t = 0; t < count; t++) {
        addr_t table[5] = {p[8 + t], (addr_t)buffers[w[3 + t]], (addr_t)buffers[w[3 + count + t]],
                           (addr_t)buffers[w[3 + 2 * count + t]], (addr_t)buffers[w[3 + 3 * count + t]]};
        adamw_f32(1, table, p[2], scalars);
      }
      return 0;
    }
    case OP_sgd: {           /* [lr, update signal, weights.., gradients.., updated flag, then count, flag bytes,
                                 sizes..]: n = 5 + 3 count */
      int count = (n - 5) / 3;
      const int *p = w + 3 + 2 * count;
      int go = flag_set(buffers, w[1]);
      if (w[2 + 2 * count] >= 0) fill_bytes(BYTES(2 + 2 * count), p[1], go);
      if (!go) return 0;
      float neg_lr = -*F32(0);
      for (int t = 0; t < count; t++) {
        addr_t table[3] = {p[2 + t], (addr_t)buffers[w[2 + t]], (addr_t)buffers[w[2 + count + t]]};
        sgd_f32(1, table, neg_lr);
      }
      return 0;
    }
    case OP_gemm_accumulate: {  /* [a, b, product, buffer, overwrite flag, updated flag, then gemm's parameters
                                    (count .. ldc, as OP_gemm's with beta 0), n]: a GEMM and the
                                    InPlaceAccumulatorV2 of its product, fused where that keeps the bits: when
                                    the flag says overwrite, the product goes straight into the buffer. */
      int over = w[4] >= 0 && flag_set(buffers, w[4]);
      float *c = over ? F32(3) : F32(2);
      gemm_f32(w[6], w[7], w[8], w[9], as_float(w[10]), F32(0) + w[11], w[12], w[13], w[14], F32(1) + w[15],
               w[16], w[17], w[18], as_float(w[19]), c + w[20], w[21], w[22]);
      if (!over) {
        float *acc = F32(3);
        const float *value = F32(2);
        for (int i = 0; i < w[23]; i++) acc[i] += value[i];
      }
      if (w[5] >= 0) fill_bytes(BYTES(5), 1, 1);
      return 0;
    }
    case OP_layernorm:       /* [x, scale, bias, y, mean, inv_std, work, rows, cols, epsilon, identity, zero] */
      layernorm_f32(w[7], w[8], F32(0), F32(1), OPT_F32(2), as_float(w[9]), as_float(w[10]), as_float(w[11]),
                    F32(3), OPT_F32(4), OPT_F32(5), F32(6));
      return 0;
    case OP_layernorm_grad:  /* [dy, x, scale, mean, inv_std, dx, dscale, dbias, work, rows, cols, identity,
                                 zero] */
      layernorm_grad_f32(w[9], w[10], F32(0), F32(1), F32(2), F32(3), F32(4), as_float(w[11]), as_float(w[12]),
                         OPT_F32(5), OPT_F32(6), OPT_F32(7), F32(8));
      return 0;
    case OP_column_sums_blocks: {  /* [x, out, blocks, rows, cols, identity]: column_sums of each [rows, cols]
                                       block of x into its [cols] of out (a sum over a middle axis) */
      const float *x = F32(0);
      float *out = F32(1);
      for (int b = 0; b < w[2]; b++, x += w[3] * w[4], out += w[4])
        column_sums_f32(w[3], w[4], x, as_float(w[5]), out);
      return 0;
    }
    case OP_reduce_rows:     /* [x, out, rows, cols, identity, zero]: np.add.reduce of each row */
      row_sums_f32(w[2], w[3], F32(0), as_float(w[4]), as_float(w[5]), F32(1));
      return 0;
    case OP_clip: clip_f32(w[2], F32(0), as_float(w[3]), as_float(w[4]), F32(1)); return 0;  /* [x, y, n, lo, hi] */
    case OP_erf: erf_f32(w[2], F32(0), F32(1)); return 0;                         /* [x, y, n] */
    case OP_copy_strided: {  /* [x, out, size, rank, in offset, out offset, shape.., in strides.., out strides..] */
      int rank = w[3];
      copy_strided(w[2], rank, w[4], w[5], w + 6, w + 6 + rank, w + 6 + 2 * rank, BYTES(0), BYTES(1));
      return 0;
    }
    case OP_cast_f32: cast_f32(w[2], w[3], buffers[w[0]], F32(1)); return 0;    /* [x, y, from, n] */
    case OP_compare: {       /* [a, b, out, kind, rank, shape.., a strides.., b strides..] */
      int rank = w[4];
      compare(w[3], rank, w + 5, F32(0), w + 5 + rank, F32(1), w + 5 + 2 * rank, BYTES(2));
      return 0;
    }
    case OP_logical: {       /* [a, b, out, kind, rank, shape.., a strides.., b strides..] */
      int rank = w[4];
      logical(w[3], rank, w + 5, BYTES(0), w + 5 + rank, w[1] < 0 ? 0 : BYTES(1), w + 5 + 2 * rank, BYTES(2));
      return 0;
    }
    case OP_where: {         /* [cond, x, y, out, size, rank, shape.., cond strides.., x strides.., y strides..] */
      int rank = w[5];
      where(w[4], rank, w + 6, BYTES(0), w + 6 + rank, BYTES(1), w + 6 + 2 * rank, BYTES(2), w + 6 + 3 * rank,
            BYTES(3));
      return 0;
    }
    case OP_gather:          /* [data, indices, out, size, outer, dim, inner, n] */
      return gather(w[3], w[4], w[5], w[6], w[7], BYTES(0), I64(1), BYTES(2));
    case OP_extremum: {      /* [a, b, out, is_min, rank, shape.., a strides.., b strides..] */
      int rank = w[4];
      extremum(w[3], rank, w + 5, F32(0), w + 5 + rank, F32(1), w + 5 + 2 * rank, F32(2));
      return 0;
    }
    case OP_clip_bounds: {   /* [x, lo, hi, y, n]: Clip with bounds read during the run, as ops/elementwise.py's:
                                 simd.clip's kernel, or np.clip's maximum then minimum where a bound is NaN */
      const float *x = F32(0);
      float lo = *F32(1), hi = *F32(2), *y = F32(3);
      if (lo == lo && hi == hi) {
        clip_f32(w[4], x, lo, hi, y);
        return 0;
      }
      for (int i = 0; i < w[4]; i++) {
        float r = x[i] > lo || x[i] != x[i] ? x[i] : lo;
        y[i] = r < hi || r != r ? r : hi;
      }
      return 0;
    }
    case OP_powi: {          /* [x, y, n, exponent] */
      const float *x = F32(0);
      float *y = F32(1);
      for (int i = 0; i < w[2]; i++) y[i] = powi_f32(x[i], w[3]);
      return 0;
    }
    case OP_gelu: {          /* [x, y, n] */
      const float *x = F32(0);
      float *y = F32(1);
      for (int i = 0; i < w[2]; i++) y[i] = gelu_1(x[i]);
      return 0;
    }
    case OP_gelu_grad: {     /* [dy, x, dx, n] */
      const float *dy = F32(0), *x = F32(1);
      float *dx = F32(2);
      for (int i = 0; i < w[3]; i++) dx[i] = gelu_grad_1(dy[i], x[i]);
      return 0;
    }
    case OP_unary: unary(w[2], w[3], F32(0), F32(1)); return 0;                  /* [x, y, kind, n] */
    case OP_nonfinite:       /* [x, count (int32, added to), n] */
      *(int *)buffers[w[1]] += nonfinite_f32(w[2], F32(0));
      return 0;
  }
  return 1;                  /* an op this build does not know */
}

/* Run the records of `words`: 0, or 1 + the index of the record whose kernel reported bad input (the records
   before it have run, the rest have not). */
API int run_program(const int *words, int n_words, void *const *buffers) {
  for (int at = 0, record = 0; at + 2 <= n_words; record++) {
    int op = words[at], n = words[at + 1];
    if (at + 2 + n > n_words || run_record(op, n, words + at + 2, buffers)) return 1 + record;
    at += 2 + n;
  }
  return 0;
}
