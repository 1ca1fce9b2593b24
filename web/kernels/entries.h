/* The kernels' entry points, for the files that call one another's: the program executor (executor.c), the parts
   of the threaded module (parts.c, program_parts.c, program_threads.c). */
#ifndef ONNXTRAIN_ENTRIES_H
#define ONNXTRAIN_ENTRIES_H

#include "kernels.h"

void gemm_f32(int batch, int m, int n, int k, float alpha, const float *a, int sa, int rsa, int csa, const float *b,
              int sb, int rsb, int csb, float beta, float *c, int sc, int ldc);
void relu_f32(int n, const float *x, float *y);
void relu_grad_f32(int n, const float *dy, const float *x, float *dx);
void sigmoid_f32(int n, const float *x, float *y);
void sigmoid_grad_f32(int n, const float *dy, const float *y, float *dx);
void softmax_f32(int rows, int cols, const float *x, float *y);
void softmax_grad_f32(int rows, int cols, const float *dy, const float *y, float *dx);
void plane_sums_f32(int planes, int size, const float *x, float *out);
void column_sums_f32(int rows, int cols, const float *x, float identity, float *out);
void column_range_sums_f32(int rows, int cols, int lo, int hi, const float *x, float identity, float *out);
void softmax_ce_sums_f32(int rows, int cols, const float *e, float identity, float zero, float *sums);
void im2col_f32(int planes, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl, int dh,
                int dw, const float *x, float *cols);
void col2im_f32(int planes, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl, int dh,
                int dw, const float *cols, float *x);
void maxpool_f32(int planes, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl, int dh,
                 int dw, const float *x, float *y, long long *indices);
int maxpool_grad_f32(int n_out, int n_in, const float *dy, const long long *indices, float *dx);
void depthwise_f32(int n, int c, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl,
                   int dh, int dw, const float *x, const float *filters, const float *bias, float *y);
void depthwise_grad_f32(int n, int c, int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl,
                        int dh, int dw, const float *dy, const float *x, const float *filters, float *dx,
                        float *dfilters);
void adamw_f32(int count, const addr_t *table, int mode, const float *s);
void sgd_f32(int count, const addr_t *table, float neg_lr);
int nonfinite_f32(int n, const float *x);
double pow_f64_int(double a, long long t);
void clip_f32(int n, const float *x, float lo, float hi, float *y);
void erf_f32(int n, const float *x, float *y);
void row_sums_f32(int rows, int cols, const float *x, float identity, float zero, float *out);
void layernorm_f32(int rows, int cols, const float *x, const float *scale, const float *bias, float epsilon,
                   float identity, float zero, float *y, float *mean, float *inv_std, float *work);
void layernorm_grad_f32(int rows, int cols, const float *dy, const float *x, const float *scale, const float *mean,
                        const float *inv_std, float identity, float zero, float *dx, float *dscale, float *dbias,
                        float *work);
int run_program(const int *words, int n_words, void *const *buffers);

/* the parts of the threaded module (gemm.c, parts.c): part `part` of `parts`, each output as the whole call's */
#define PART_WINDOW int h, int w, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw
void gemm_f32_part(int part, int parts, int batch, int m, int n, int k, float alpha, const float *a, int sa,
                   int rsa, int csa, const float *b, int sb, int rsb, int csb, float beta, float *c, int sc,
                   int ldc);
void im2col_f32_part(int part, int parts, int planes, PART_WINDOW, const float *x, float *cols);
void col2im_f32_part(int part, int parts, int planes, PART_WINDOW, const float *cols, float *x);
void maxpool_f32_part(int part, int parts, int planes, PART_WINDOW, const float *x, float *y, long long *indices);
void depthwise_f32_part(int part, int parts, int n, int c, PART_WINDOW, const float *x, const float *filters,
                        const float *bias, float *y);
void depthwise_grad_f32_part(int part, int parts, int n, int c, PART_WINDOW, const float *dy, const float *x,
                             const float *filters, float *dx, float *dfilters);

#endif
