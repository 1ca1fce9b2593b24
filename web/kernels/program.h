/* The program executor's records, for the files that run them: the executor (executor.c) and the program run by
   many threads at once (program_threads.c).  The op ids are the positions in OPS (append only). */
#ifndef ONNXTRAIN_PROGRAM_H
#define ONNXTRAIN_PROGRAM_H

#include "entries.h"

#define OPS(X)                                                                                                   \
  X(copy) X(fill) X(strided) X(gemm) X(relu) X(relu_grad) X(sigmoid) X(sigmoid_grad) X(softmax) X(softmax_grad) \
  X(column_sums) X(row_sums) X(plane_sums) X(im2col) X(col2im) X(maxpool) X(maxpool_grad) X(depthwise)          \
  X(depthwise_grad) X(softmax_ce) X(softmax_ce_grad) X(accumulate) X(adamw) X(sgd) X(nonfinite) X(gemm_accumulate) \
  X(layernorm) X(layernorm_grad) X(column_sums_blocks) X(unary) X(reduce_rows) \
  X(clip) X(erf) X(copy_strided) X(cast_f32) \
  X(compare) X(logical) X(where) X(gather) X(extremum) X(clip_bounds) X(powi) X(gelu) X(gelu_grad)

#define ID(name) OP_##name,
enum { OPS(ID) OP_COUNT };

/* One record [op, n, w_1 .. w_n] given as its op, n and w: 0, or 1 when its kernel reports bad input. */
int run_record(int op, int n, const int *w, void *const *buffers);

#endif
