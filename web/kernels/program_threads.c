/* One program run by `parts` threads at once (the kernel pool's threads, web/lib/threads.mjs; NativeThreads in
   CPython, pysrc/onnxtrain/wasm/native_threads.py), each record's work split over them: a record runs whole on
   part 0, or in slices on every part along an axis where each output is computed exactly as the whole record
   computes it (elements, rows, planes, channels, gemm's panels), so that the results are run_program's bits for
   any parts count.  Records that may fail (bad labels, indices) and reductions whose order a split would change
   run on part 0.  A barrier stands between records where a later one may read what an earlier wrote: before a
   split record (unless nothing ran since the last barrier) and before a record of part 0's after a split one.

   The sync block: program_sync_words() int32s, zeroed by the caller once before the first run and reused by every
   later run (any program, any parts count): [0] the result (0, or 1 + the index of the failing record, as
   run_program returns; read it after every part has returned), [1] the parts arrived at the barrier, [2] the
   barrier's generation (how many barriers have ended), [3] the parts asleep in it, [4] the generation of the
   barrier after which every part stops (a record of part 0's failed).

   A build without atomics (the single-threaded side module) needs parts == 1: there part 0 runs the whole program
   and the other parts return at once. */
#include "program.h"

#if defined(__wasm__) && !defined(__wasm_atomics__)
#define THREADED 0
#else
#define THREADED 1
#endif

enum { SYNC_RESULT, SYNC_ARRIVED, SYNC_GENERATION, SYNC_SLEEPERS, SYNC_STOP, SYNC_WORDS = 16 };   /* 64 bytes */

API int program_sync_words(void) { return SYNC_WORDS; }

#if THREADED

/* -- the barrier: a generation counter, spinning briefly, then asleep (futex natively, memory.atomic.wait32 in a
      worker) -------------------------------------------------------------------------------------------------- */

#if defined(__wasm__)
static void sleep_on(int *at, int seen) { __builtin_wasm_memory_atomic_wait32(at, seen, -1); }
static void wake_all(int *at) { __builtin_wasm_memory_atomic_notify(at, 0x7fffffffu); }
static inline void relax(void) {}
#else
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
static void sleep_on(int *at, int seen) { syscall(SYS_futex, at, FUTEX_WAIT_PRIVATE, seen, 0, 0, 0); }
static void wake_all(int *at) { syscall(SYS_futex, at, FUTEX_WAKE_PRIVATE, 0x7fffffff, 0, 0, 0); }
#else
#include <sched.h>
static void sleep_on(int *at, int seen) { (void)at; (void)seen; sched_yield(); }
static void wake_all(int *at) { (void)at; }
#endif
#if defined(__x86_64__) || defined(__i386__)
static inline void relax(void) { __builtin_ia32_pause(); }
#elif defined(__aarch64__)
static inline void relax(void) { __asm__ __volatile__("yield"); }
#else
static inline void relax(void) {}
#endif
#endif

/* Checks of the generation before sleeping: some 5-40 us natively (a pause is 5-40 ns; long spins only steal the
   core from a part the scheduler has not run yet when other processes share the cores), about as long in wasm. */
#if defined(__wasm__)
enum { SPINS = 20000 };
#else
enum { SPINS = 1000 };
#endif

/* Waits until all `parts` have arrived; the barrier's generation (the count of barriers ended, with this one). */
static int barrier(int *sync, int parts) {
  int *generation = sync + SYNC_GENERATION, seen = __atomic_load_n(generation, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(sync + SYNC_ARRIVED, 1, __ATOMIC_ACQ_REL) == parts) {
    __atomic_store_n(sync + SYNC_ARRIVED, 0, __ATOMIC_RELAXED);      /* published by the generation's release */
    __atomic_fetch_add(generation, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(sync + SYNC_SLEEPERS, __ATOMIC_SEQ_CST)) wake_all(generation);
    return (int)((unsigned)seen + 1u);
  }
  for (int i = 0; i < SPINS; i++) {
    if (__atomic_load_n(generation, __ATOMIC_ACQUIRE) != seen) return (int)((unsigned)seen + 1u);
    relax();
  }
  __atomic_add_fetch(sync + SYNC_SLEEPERS, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(generation, __ATOMIC_SEQ_CST) == seen) sleep_on(generation, seen);
  __atomic_sub_fetch(sync + SYNC_SLEEPERS, 1, __ATOMIC_SEQ_CST);
  return (int)((unsigned)seen + 1u);
}

/* -- a pool's idle threads (NativeThreads in CPython): waiting for a word to change, without the GIL ----------- */

/* Waits until *word differs from `seen` (spinning briefly, then asleep) and returns it. */
API int program_threads_wait(int *word, int seen) {
  int now;
  for (int i = 0; i < SPINS; i++) {
    if ((now = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != seen) return now;
    relax();
  }
  while ((now = __atomic_load_n(word, __ATOMIC_SEQ_CST)) == seen) sleep_on(word, seen);
  return now;
}

/* Adds `add` to *word and wakes the threads waiting on it. */
API void program_threads_post(int *word, int add) {
  __atomic_add_fetch(word, add, __ATOMIC_SEQ_CST);
  wake_all(word);
}

/* -- which records split, and how -------------------------------------------------------------------------------- */

/* Work (in cheap element operations, ~0.3 ns each natively) below which a record runs whole on part 0: a barrier
   costs ~0.15 us when the parts' cores are free (~1/4 of this), and the other core's cache misses on the
   operands more; 2048 and 8192 measured alike on the MLP and LoRA steps, 32768 slower on LoRA (bench/
   bench_program_threads.py).  It decides speed only, never bits. */
enum { SPLIT_WORK = 1 << 13 };
static int split_work = SPLIT_WORK;

#define CUT(total, part, parts) ((long long)(total) * (part) / (parts))

static inline float word_float(int w) {
  float f;
  __builtin_memcpy(&f, &w, 4);
  return f;
}

enum { SOLO, SLICE, GEMM, GEMM_ACCUMULATE, PLANES, DEPTHWISE, DEPTHWISE_GRAD, COLUMNS, TENSORS, COUNT };
enum { MAX_SLICED = 8, MAX_DIMS = 8 };

/* A record cut into slices of `units` along one axis: its first `buffers` words are buffers, each advancing
   stride[b] bytes per unit (0: the same for every slice) and spanning bytes [from[b], to[b]) of its pointer in
   the whole record; the slice's count goes into word `count_at`.  out: the buffers written; once: flags that
   part 0 alone writes (the others' slices have none); own: a work buffer (own_floats) that each part but the
   last has of its own; dense: buffers laid out as the units of the output (one may then be the output itself,
   in place). */
typedef struct {
  int buffers, count_at, align;
  long long units, work, stride[MAX_SLICED], from[MAX_SLICED], to[MAX_SLICED];
  unsigned out, once, own, dense;
  int own_floats;
} slicing;

/* [lo, hi): the bytes a view of `size`-byte elements, dims and element strides, spans around its pointer. */
static void span(int rank, const int *dims, const int *strides, int size, long long *lo, long long *hi) {
  long long a = 0, b = 0;
  for (int d = 0; d < rank; d++) {
    if (dims[d] == 0) {
      *lo = *hi = 0;
      return;
    }
    long long reach = (long long)(dims[d] - 1) * strides[d];
    if (reach < 0) a += reach; else b += reach;
  }
  *lo = a * size;
  *hi = (b + 1) * size;
}

static int dense(int rank, const int *shape, const int *strides) {
  long long want = 1;
  for (int d = rank - 1; d >= 0; d--) {
    if (shape[d] != 1 && strides[d] != want) return 0;
    want *= shape[d];
  }
  return 1;
}

/* Buffer b of an element-wise record: n elements of `size` bytes. */
static void elements(slicing *s, int b, int n, int size) {
  s->stride[b] = size;
  s->from[b] = 0;
  s->to[b] = (long long)n * size;
  s->dense |= 1u << b;
}

/* Buffer b of a record over rows: `units` rows of `row` bytes (0: read whole by every row, `whole` bytes). */
static void rows(slicing *s, int b, long long units, long long row, long long whole) {
  s->stride[b] = row;
  s->from[b] = 0;
  s->to[b] = row ? units * row : whole;
  if (row) s->dense |= 1u << b;
}

/* The strided ops' operands, split along their first dimension: buffer b of `size`-byte elements at the element
   strides `strides` of the record's `shape` (the output: contiguous). */
static void outer_rows(slicing *s, int b, int rank, const int *shape, const int *strides, int size) {
  s->stride[b] = (long long)strides[0] * size;
  span(rank, shape, strides, size, &s->from[b], &s->to[b]);
  if (dense(rank, shape, strides)) s->dense |= 1u << b;
}

static void contiguous_out(slicing *s, int b, int rank, const int *shape, int size) {
  long long row = size, total;
  for (int d = 1; d < rank; d++) row *= shape[d];
  total = row * shape[0];
  s->stride[b] = row;
  s->from[b] = 0;
  s->to[b] = total;
  s->dense |= 1u << b;
  s->out |= 1u << b;
}

static long long product(int rank, const int *shape) {
  long long total = 1;
  for (int d = 0; d < rank; d++) total *= shape[d];
  return total;
}

/* How a record splits: SOLO (part 0 runs it whole), SLICE (s filled), or one of the kinds run_slice knows;
   *work: its cost estimate.  Decided from the words alone, so every part decides alike. */
static int plan(int op, int n, const int *w, slicing *s, long long *work) {
  static const int cast_sizes[] = {1, 1, 4, 8, 1};
  __builtin_memset(s, 0, sizeof *s);
  s->align = 16;
  *work = 0;
  switch (op) {
    case OP_copy:            /* [src, dst, nbytes] */
      s->buffers = 2, s->count_at = 2, s->units = w[2], s->align = 64, s->out = 2;
      elements(s, 0, w[2], 1), elements(s, 1, w[2], 1);
      *work = w[2] / 8;
      return SLICE;
    case OP_fill:            /* [dst, nbytes, byte] */
      s->buffers = 1, s->count_at = 1, s->units = w[1], s->align = 64, s->out = 1;
      elements(s, 0, w[1], 1);
      *work = w[1] / 8;
      return SLICE;
    case OP_relu: case OP_sigmoid: case OP_clip: case OP_erf: case OP_powi: case OP_gelu:   /* [x, y, n, ..] */
      s->buffers = 2, s->count_at = 2, s->units = w[2], s->out = 2;
      elements(s, 0, w[2], 4), elements(s, 1, w[2], 4);
      *work = (long long)w[2] * (op == OP_relu || op == OP_clip ? 1 : 16);
      return SLICE;
    case OP_relu_grad: case OP_sigmoid_grad: case OP_gelu_grad:                             /* [dy, x, dx, n] */
      s->buffers = 3, s->count_at = 3, s->units = w[3], s->out = 4;
      for (int b = 0; b < 3; b++) elements(s, b, w[3], 4);
      *work = (long long)w[3] * (op == OP_relu_grad ? 1 : 16);
      return SLICE;
    case OP_unary: case OP_cast_f32:                                                        /* [x, y, kind, n] */
      if (op == OP_cast_f32 && (w[2] < 0 || w[2] > 4)) return SOLO;
      s->buffers = 2, s->count_at = 3, s->units = w[3], s->out = 2;
      elements(s, 0, w[3], op == OP_unary ? 4 : cast_sizes[w[2]]), elements(s, 1, w[3], 4);
      *work = (long long)w[3] * (op == OP_unary && w[2] >= 3 ? 16 : 1);
      return SLICE;
    case OP_clip_bounds:     /* [x, lo, hi, y, n] */
      s->buffers = 4, s->count_at = 4, s->units = w[4], s->out = 8;
      elements(s, 0, w[4], 4), elements(s, 3, w[4], 4);
      rows(s, 1, w[4], 0, 4), rows(s, 2, w[4], 0, 4);
      *work = w[4];
      return SLICE;
    case OP_accumulate:      /* [buffer, value, overwrite flag, updated flag, n] */
      s->buffers = 4, s->count_at = 4, s->units = w[4], s->out = 1, s->once = 8;
      elements(s, 0, w[4], 4), elements(s, 1, w[4], 4);
      rows(s, 2, w[4], 0, 1), rows(s, 3, w[4], 0, 1);
      *work = w[4];
      return SLICE;
    case OP_softmax: case OP_softmax_grad: {   /* [x, y, rows, cols], [dy, y, dx, rows, cols] */
      int buffers = op == OP_softmax ? 2 : 3, r = w[buffers], c = w[buffers + 1];
      s->buffers = buffers, s->count_at = buffers, s->units = r, s->align = 1, s->out = 1u << (buffers - 1);
      for (int b = 0; b < buffers; b++) rows(s, b, r, 4LL * c, 0);
      *work = (long long)r * c * (op == OP_softmax ? 16 : 2);
      return SLICE;
    }
    case OP_row_sums: case OP_reduce_rows: case OP_plane_sums:   /* [x, out, rows, cols, ..] */
      s->buffers = 2, s->count_at = 2, s->units = w[2], s->align = 1, s->out = 2;
      rows(s, 0, w[2], 4LL * w[3], 0), rows(s, 1, w[2], 4, 0);
      *work = (long long)w[2] * w[3];
      return SLICE;
    case OP_column_sums_blocks:   /* [x, out, blocks, rows, cols, identity] */
      s->buffers = 2, s->count_at = 2, s->units = w[2], s->align = 1, s->out = 2;
      rows(s, 0, w[2], 4LL * w[3] * w[4], 0), rows(s, 1, w[2], 4LL * w[4], 0);
      *work = (long long)w[2] * w[3] * w[4];
      return SLICE;
    case OP_layernorm: {     /* [x, scale, bias, y, mean, inv_std, work, rows, cols, ..]: each part its own work */
      int r = w[7], c = w[8];
      if (c > 4096) return SOLO;
      s->buffers = 7, s->count_at = 7, s->units = r, s->align = 1, s->out = 8 | 16 | 32 | 64, s->own = 64;
      s->own_floats = c;
      rows(s, 0, r, 4LL * c, 0), rows(s, 1, r, 0, 4LL * c), rows(s, 2, r, 0, 4LL * c);
      rows(s, 3, r, 4LL * c, 0), rows(s, 4, r, 4, 0), rows(s, 5, r, 4, 0), rows(s, 6, r, 0, 4LL * c);
      *work = (long long)r * c * 4;
      return SLICE;
    }
    case OP_strided: case OP_extremum: case OP_compare: case OP_logical: {
      /* [a, b, out, kind, rank, shape.., a strides.., b strides..] */
      int rank = w[4], in = op == OP_logical ? 1 : 4, res = op == OP_compare || op == OP_logical ? 1 : 4;
      const int *shape = w + 5;
      if (rank < 1 || rank > MAX_DIMS) return SOLO;
      s->buffers = 3, s->count_at = 5, s->units = shape[0], s->align = 1;
      outer_rows(s, 0, rank, shape, w + 5 + rank, in);
      outer_rows(s, 1, rank, shape, w + 5 + 2 * rank, in);
      contiguous_out(s, 2, rank, shape, res);
      *work = product(rank, shape);
      return SLICE;
    }
    case OP_where: {         /* [cond, x, y, out, size, rank, shape.., cond strides.., x strides.., y strides..] */
      int size = w[4], rank = w[5];
      const int *shape = w + 6;
      if (rank < 1 || rank > MAX_DIMS) return SOLO;
      s->buffers = 4, s->count_at = 6, s->units = shape[0], s->align = 1;
      outer_rows(s, 0, rank, shape, w + 6 + rank, 1);
      outer_rows(s, 1, rank, shape, w + 6 + 2 * rank, size);
      outer_rows(s, 2, rank, shape, w + 6 + 3 * rank, size);
      contiguous_out(s, 3, rank, shape, size);
      *work = product(rank, shape);
      return SLICE;
    }
    case OP_copy_strided: {  /* [x, out, size, rank, in offset, out offset, shape.., in strides.., out strides..] */
      int size = w[2], rank = w[3];
      const int *shape = w + 6;
      if (rank < 1 || rank > MAX_DIMS) return SOLO;
      s->buffers = 2, s->count_at = 6, s->units = shape[0], s->align = 1, s->out = 2;
      outer_rows(s, 0, rank, shape, w + 6 + rank, size);
      outer_rows(s, 1, rank, shape, w + 6 + 2 * rank, size);
      for (int b = 0; b < 2; b++) {
        long long offset = (long long)w[4 + b] * size;
        s->from[b] += offset, s->to[b] += offset;
      }
      *work = product(rank, shape);
      return SLICE;
    }
    case OP_gemm:            /* batch * m * n * k multiply-adds, at about 8 for one cheap element operation */
      *work = (long long)w[3] * w[4] * w[5] * w[6] / 8;
      return GEMM;
    case OP_gemm_accumulate:
      *work = (long long)w[6] * w[7] * w[8] * w[9] / 8;
      return GEMM_ACCUMULATE;
    case OP_im2col: case OP_col2im:   /* [x, cols, planes, window] */
      *work = (long long)w[2] * w[7] * w[8] * w[5] * w[6];
      return PLANES;
    case OP_maxpool:         /* [x, y, indices, planes, window] */
      *work = (long long)w[3] * w[8] * w[9] * w[6] * w[7];
      return PLANES;
    case OP_depthwise:       /* [x, filters, bias, y, n, c, window] */
      *work = (long long)w[4] * w[5] * w[8] * w[9] * w[10] * w[11];
      return DEPTHWISE;
    case OP_depthwise_grad:  /* [dy, x, filters, dx, dfilters, n, c, window] */
      *work = (long long)w[5] * w[6] * w[9] * w[10] * w[11] * w[12] * 2;
      return DEPTHWISE_GRAD;
    case OP_column_sums:     /* [x, out, rows, cols, identity] */
      *work = (long long)w[2] * w[3];
      return COLUMNS;
    case OP_adamw: case OP_sgd: {   /* the sizes: the last `count` words */
      int count = op == OP_adamw ? (n - 12) / 5 : (n - 5) / 3;
      for (int t = 0; t < count; t++) *work += (long long)w[n - count + t] * (op == OP_adamw ? 8 : 1);
      return TENSORS;
    }
    case OP_nonfinite:       /* [x, count, n] */
      *work = w[2];
      return COUNT;
  }
  return SOLO;               /* softmax_ce (and its gradient), maxpool_grad, gather: may fail; layernorm_grad:
                                column sums over every row */
}

static inline const char *at(void *const *buffers, int index) { return (const char *)buffers[index]; }

static int overlap(const char *p, long long p_from, long long p_to, const char *q, long long q_from,
                   long long q_to) {
  return p_from < p_to && q_from < q_to && p + p_from < q + q_to && q + q_from < p + p_to;
}

/* Whether each slice computes what the whole record does: what a slice writes is read by no other slice, and a
   buffer written in place is the same view as what it reads. */
static int slices_apart(const slicing *s, const int *w, void *const *buffers) {
  for (int i = 0; i < s->buffers; i++) {
    if (w[i] < 0 || !((s->out | s->once) >> i & 1)) continue;
    for (int j = 0; j < s->buffers; j++) {
      if (j == i || w[j] < 0) continue;
      const char *p = at(buffers, w[i]), *q = at(buffers, w[j]);
      int same_view = p == q && s->stride[i] == s->stride[j] && (s->dense >> i & 1) && (s->dense >> j & 1) &&
                      !((s->once >> i | s->once >> j) & 1);
      if (!same_view && overlap(p, s->from[i], s->to[i], q, s->from[j], s->to[j])) return 0;
    }
  }
  return 1;
}

/* Byte ranges of two gemm operands at element offsets, batch/row/column strides and extents. */
static int gemm_apart(const float *c, int batch, int m, int n, int sc, int ldc, const float *a, int rows, int cols,
                      int sa, int rsa, int csa) {
  int cd[3] = {batch, m, n}, cs[3] = {sc, ldc, 1}, ad[3] = {batch, rows, cols}, as[3] = {sa, rsa, csa};
  long long c_lo, c_hi, a_lo, a_hi;
  span(3, cd, cs, 4, &c_lo, &c_hi);
  span(3, ad, as, 4, &a_lo, &a_hi);
  return !overlap((const char *)c, c_lo, c_hi, (const char *)a, a_lo, a_hi);
}

/* Whether a record of these kinds may split (its outputs apart from its inputs). */
static int may_split(int kind, int op, int n, const int *w, void *const *buffers, const slicing *s) {
  switch (kind) {
    case SLICE: return slices_apart(s, w, buffers);
    case GEMM: case GEMM_ACCUMULATE: {
      const int *g = w + (kind == GEMM ? 3 : 6);     /* count, m, n, k, alpha, oa, sa, rsa, csa, ob, .. ldc */
      const float *a = (const float *)at(buffers, w[0]) + g[5], *b = (const float *)at(buffers, w[1]) + g[9];
      const float *c = (const float *)at(buffers, w[2]) + g[14];
      long long one = (long long)(g[1] - 1) * g[16] + g[2];      /* the floats one product of C spans */
      if (g[0] > 1 && (g[15] < 0 ? -(long long)g[15] : g[15]) < one) return 0;   /* parts may take products */
      if (kind == GEMM_ACCUMULATE) {
        if (at(buffers, w[2]) == at(buffers, w[3])) return 0;
        if (w[4] >= 0 && w[5] >= 0 && at(buffers, w[4]) == at(buffers, w[5])) return 0;
        const float *acc = (const float *)at(buffers, w[3]) + g[14];
        if (!gemm_apart(acc, g[0], g[1], g[2], g[15], g[16], a, g[1], g[3], g[6], g[7], g[8]) ||
            !gemm_apart(acc, g[0], g[1], g[2], g[15], g[16], b, g[3], g[2], g[10], g[11], g[12]))
          return 0;
      }
      return gemm_apart(c, g[0], g[1], g[2], g[15], g[16], a, g[1], g[3], g[6], g[7], g[8]) &&
             gemm_apart(c, g[0], g[1], g[2], g[15], g[16], b, g[3], g[2], g[10], g[11], g[12]);
    }
    case PLANES: {           /* planes of h * w in, of kh * kw * oh * ow (or oh * ow) out */
      int pool = op == OP_maxpool, planes = w[2 + pool];
      const int *g = w + 3 + pool;
      long long in = 4LL * planes * g[0] * g[1], cols = 4LL * planes * g[2] * g[3] * (pool ? 1 : g[4] * g[5]);
      long long x_bytes = op == OP_col2im ? cols : in, y_bytes = op == OP_col2im ? in : cols;
      if (overlap(at(buffers, w[0]), 0, x_bytes, at(buffers, w[1]), 0, y_bytes)) return 0;
      return !pool || w[2] < 0 || (!overlap(at(buffers, w[2]), 0, 2 * y_bytes, at(buffers, w[0]), 0, x_bytes) &&
                                   !overlap(at(buffers, w[2]), 0, 2 * y_bytes, at(buffers, w[1]), 0, y_bytes));
    }
    case DEPTHWISE: case DEPTHWISE_GRAD: {   /* whole tensors: images n * c planes, filters c * kh * kw */
      int grad = kind == DEPTHWISE_GRAD, nc = w[4 + grad] * w[5 + grad], c = w[5 + grad];
      const int *g = w + 6 + grad;
      long long in = 4LL * nc * g[0] * g[1], res = 4LL * nc * g[2] * g[3], taps = 4LL * c * g[4] * g[5];
      long long grad_sizes[5] = {res, in, taps, in, taps}, forward_sizes[4] = {in, taps, 4LL * c, res};
      const long long *sizes = grad ? grad_sizes : forward_sizes;
      int buffers_n = grad ? 5 : 4, first_out = grad ? 3 : 3;
      for (int i = first_out; i < buffers_n; i++)
        for (int j = 0; j < buffers_n; j++)
          if (j != i && w[i] >= 0 && w[j] >= 0 &&
              overlap(at(buffers, w[i]), 0, sizes[i], at(buffers, w[j]), 0, sizes[j]))
            return 0;
      return 1;
    }
    case COLUMNS:
      return !overlap(at(buffers, w[0]), 0, 4LL * w[2] * w[3], at(buffers, w[1]), 0, 4LL * w[3]);
    case TENSORS: {          /* each tensor's weights, gradients and moments apart; the flags apart */
      int adam = op == OP_adamw, count = adam ? (n - 12) / 5 : (n - 5) / 3, per = adam ? 4 : 2, first = adam ? 3 : 2;
      int signal = adam ? 2 : 1, updated = first + per * count;
      if (w[signal] >= 0 && w[updated] >= 0 && at(buffers, w[signal]) == at(buffers, w[updated])) return 0;
      for (int t = 0; t < count; t++) {
        long long size = 4LL * w[n - count + t];
        for (int i = 0; i < per; i++)
          for (int j = i + 1; j < per; j++)
            if (overlap(at(buffers, w[first + i * count + t]), 0, size, at(buffers, w[first + j * count + t]), 0,
                        size))
              return 0;
      }
      return 1;
    }
    case COUNT: return 1;
  }
  return 0;
}

/* [*lo, *hi): the units of part `part` of `parts`, cut at multiples of `align`. */
static void cut(long long units, int align, int part, int parts, long long *lo, long long *hi) {
  long long blocks = (units + align - 1) / align;
  *lo = CUT(blocks, part, parts) * align;
  *hi = CUT(blocks, part + 1, parts) * align;
  if (*hi > units) *hi = units;
  if (*lo > *hi) *lo = *hi;
}

/* Part `part`'s slice of a SLICE record: the same op on its own words and pointer table. */
static void run_slice(int op, int n, const int *w, void *const *buffers, const slicing *s, int part, int parts) {
  long long lo, hi;
  cut(s->units, s->align, part, parts, &lo, &hi);
  if (lo >= hi) return;
  int words[n];
  void *table[MAX_SLICED];
  float own[s->own ? s->own_floats : 1];
  for (int i = 0; i < n; i++) words[i] = w[i];
  for (int b = 0; b < s->buffers; b++) {
    if (w[b] < 0 || (part && (s->once >> b & 1))) {
      words[b] = -1;
      continue;
    }
    words[b] = b;
    /* the last part, which has the last unit, works in the record's own work buffer: it ends as the whole
       record leaves it */
    table[b] = (s->own >> b & 1) && part < parts - 1 ? (void *)own : (char *)buffers[w[b]] + lo * s->stride[b];
  }
  words[s->count_at] = (int)(hi - lo);
  run_record(op, n, words, table);
}

/* Part `part`'s share of AdamW's or SGD's tensors: each tensor's elements cut in parts of whole 16-float blocks,
   the update flag written by part 0 alone. */
static void run_tensors(int op, int n, const int *w, void *const *buffers, int part, int parts) {
  int adam = op == OP_adamw, count = adam ? (n - 12) / 5 : (n - 5) / 3, per = adam ? 4 : 2;
  int first = adam ? 3 : 2, updated = first + per * count;
  int words[n];
  void *table[updated + 1];
  for (int i = 0; i < n; i++) words[i] = w[i];
  for (int b = 0; b <= updated; b++) {
    words[b] = w[b] < 0 || (part && b == updated) ? -1 : b;
    table[b] = w[b] < 0 ? 0 : buffers[w[b]];
  }
  for (int t = 0; t < count; t++) {
    long long lo, hi;
    cut(w[n - count + t], 16, part, parts, &lo, &hi);
    words[n - count + t] = (int)(hi - lo);
    for (int i = 0; i < per; i++)
      table[first + i * count + t] = (char *)buffers[w[first + i * count + t]] + 4 * lo;
  }
  run_record(op, n, words, table);
}

#define F32(i) ((float *)buffers[w[i]])
#define OPT_F32(i) (w[i] < 0 ? (float *)0 : (float *)buffers[w[i]])
#define WINDOW(i) w[i], w[i + 1], w[i + 2], w[i + 3], w[i + 4], w[i + 5], w[i + 6], w[i + 7], w[i + 8], w[i + 9], \
                  w[i + 10], w[i + 11]

/* Part `part`'s share of a split record (all parts call it alike; GEMM_ACCUMULATE has a barrier inside). */
static void run_part(int kind, int op, int n, const int *w, void *const *buffers, const slicing *s, int part,
                     int parts, int *sync) {
  switch (kind) {
    case SLICE: run_slice(op, n, w, buffers, s, part, parts); return;
    case TENSORS: run_tensors(op, n, w, buffers, part, parts); return;
    case GEMM:
      gemm_f32_part(part, parts, w[3], w[4], w[5], w[6], word_float(w[7]), F32(0) + w[8], w[9], w[10], w[11],
                    F32(1) + w[12], w[13], w[14], w[15], word_float(w[16]), F32(2) + w[17], w[18], w[19]);
      return;
    case GEMM_ACCUMULATE: {  /* as executor.c's: into the buffer when the flag says overwrite, else the product,
                                then (after every part's product) each part adds its range of it */
      int over = w[4] >= 0 && *(const unsigned char *)buffers[w[4]] != 0;
      float *c = over ? F32(3) : F32(2);
      gemm_f32_part(part, parts, w[6], w[7], w[8], w[9], word_float(w[10]), F32(0) + w[11], w[12], w[13], w[14],
                    F32(1) + w[15], w[16], w[17], w[18], word_float(w[19]), c + w[20], w[21], w[22]);
      if (!over) {
        long long lo, hi;
        barrier(sync, parts);
        cut(w[23], 16, part, parts, &lo, &hi);
        float *acc = F32(3);
        const float *value = F32(2);
        for (long long i = lo; i < hi; i++) acc[i] += value[i];
      }
      if (part == 0 && w[5] >= 0) *(unsigned char *)buffers[w[5]] = 1;
      return;
    }
    case PLANES:
      if (op == OP_im2col) im2col_f32_part(part, parts, w[2], WINDOW(3), F32(0), F32(1));
      else if (op == OP_col2im) col2im_f32_part(part, parts, w[2], WINDOW(3), F32(0), F32(1));
      else maxpool_f32_part(part, parts, w[3], WINDOW(4), F32(0), F32(1), w[2] < 0 ? 0 : (long long *)buffers[w[2]]);
      return;
    case DEPTHWISE:
      depthwise_f32_part(part, parts, w[4], w[5], WINDOW(6), F32(0), F32(1), OPT_F32(2), F32(3));
      return;
    case DEPTHWISE_GRAD:
      depthwise_grad_f32_part(part, parts, w[5], w[6], WINDOW(7), F32(0), F32(1), F32(2), OPT_F32(3), OPT_F32(4));
      return;
    case COLUMNS: {
      long long lo, hi;
      cut(w[3], 16, part, parts, &lo, &hi);
      if (lo < hi) column_range_sums_f32(w[2], w[3], (int)lo, (int)hi, F32(0), word_float(w[4]), F32(1));
      return;
    }
    case COUNT: {
      long long lo, hi;
      cut(w[2], 16, part, parts, &lo, &hi);
      int found = lo < hi ? nonfinite_f32((int)(hi - lo), F32(0) + lo) : 0;
      if (found) __atomic_fetch_add((int *)buffers[w[1]], found, __ATOMIC_RELAXED);   /* integers: any order */
      return;
    }
  }
}

/* Whether a record runs split at `parts` (every part decides alike: from the words and the buffers' addresses). */
static int split_kind(int op, int n, const int *w, void *const *buffers, int parts, slicing *s) {
  long long work;
  int kind = plan(op, n, w, s, &work);
  if (kind != SOLO && (work < split_work || (kind == SLICE && s->units < parts) ||
                       !may_split(kind, op, n, w, buffers, s)))
    kind = SOLO;
  return kind;
}

#else
API int program_threads_wait(int *word, int seen) { (void)seen; return *word; }   /* no other thread here */

API void program_threads_post(int *word, int add) { *word += add; }

#endif

/* Sets the work below which records run whole on part 0 (SPLIT_WORK; 0 splits every record that can split), for
   tests and benches, and returns the one it replaces: set it between runs only, never while one is under way. */
API int program_threads_split_work(int work) {
#if THREADED
  int was = split_work;
  split_work = work;
  return was;
#else
  (void)work;
  return 0;
#endif
}

/* How many records of the program run split over `parts` parts (0 in a build without atomics). */
API int program_split_records(const int *words, int n_words, void *const *buffers, int parts) {
  int count = 0;
#if THREADED
  for (int at = 0; at + 2 <= n_words && at + 2 + words[at + 1] <= n_words; at += 2 + words[at + 1]) {
    slicing s;
    count += parts > 1 && split_kind(words[at], words[at + 1], words + at + 2, buffers, parts, &s) != SOLO;
  }
#else
  (void)words, (void)n_words, (void)buffers, (void)parts;
#endif
  return count;
}

/* Part `part` of `parts` of run_program(words, n_words, buffers), every part called once, at once, each on its own
   thread, with the same words, buffers and sync block; sync[0] holds run_program's result once all have
   returned (records after a failing one run on no part). */
API void run_program_threads(int part, int parts, const int *words, int n_words, void *const *buffers, int *sync) {
  if (parts <= 1 || !THREADED) {
    if (part == 0) sync[SYNC_RESULT] = run_program(words, n_words, buffers);
    return;
  }
#if THREADED
  enum { CLEAN, SOLO_WROTE, PARTS_WROTE } since_barrier = CLEAN;
  int failed = 0;
  /* A failure stops every part after the next barrier, and only there: a part still leaving the barrier before it
     must not see it (it would stop a record early).  So the failure names that barrier by its generation. */
  if (part == 0) {
    __atomic_store_n(sync + SYNC_RESULT, 0, __ATOMIC_RELAXED);
    __atomic_store_n(sync + SYNC_STOP, __atomic_load_n(sync + SYNC_GENERATION, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  }
  for (int at = 0, record = 0; at + 2 <= n_words; record++) {
    int op = words[at], n = words[at + 1];
    const int *w = words + at + 2;
    if (at + 2 + n > n_words) {
      if (part == 0 && !failed) __atomic_store_n(sync + SYNC_RESULT, 1 + record, __ATOMIC_RELAXED);
      return;
    }
    at += 2 + n;
    slicing s;
    int kind = split_kind(op, n, w, buffers, parts, &s);
    if (kind == SOLO ? since_barrier == PARTS_WROTE : since_barrier != CLEAN) {
      if (barrier(sync, parts) == __atomic_load_n(sync + SYNC_STOP, __ATOMIC_RELAXED)) return;
    }
    if (kind == SOLO) {
      since_barrier = SOLO_WROTE;
      if (part == 0 && !failed && run_record(op, n, w, buffers)) {
        failed = 1;          /* the others learn it at the next barrier (no barrier ends without part 0), or have
                                finished */
        unsigned next = (unsigned)__atomic_load_n(sync + SYNC_GENERATION, __ATOMIC_RELAXED) + 1u;
        __atomic_store_n(sync + SYNC_RESULT, 1 + record, __ATOMIC_RELAXED);
        __atomic_store_n(sync + SYNC_STOP, (int)next, __ATOMIC_RELAXED);
      }
      continue;
    }
    since_barrier = PARTS_WROTE;
    run_part(kind, op, n, w, buffers, &s, part, parts, sync);
  }
#endif
}
