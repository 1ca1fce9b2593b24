/* exp and log of float32 values and a double raised to an integer power, freestanding (no libm in the wasm builds),
   for the program executor (executor.c): softmax cross-entropy's exp and log, AdamW's bias corrections.
   exp and log are computed in double and rounded once to float32, so they are correctly rounded except within
   about 1e-16 of a halfway point; numpy's float32 exp and log (its own SIMD code) are within a few ulp of them,
   not bit-equal.  pow_f64_int multiplies in double-double (about 104 bits), so its double result is the
   correctly rounded a^t except within about 1e-30 of a halfway point, as glibc's pow is to within 0.52 ulp. */
#include "kernels.h"

static inline double from_bits(unsigned long long u) {
  double d;
  __builtin_memcpy(&d, &u, 8);
  return d;
}

static inline unsigned long long to_bits(double d) {
  unsigned long long u;
  __builtin_memcpy(&u, &d, 8);
  return u;
}

/* 2^n for -1022 <= n <= 1023 */
static inline double pow2(int n) { return from_bits((unsigned long long)(n + 1023) << 52); }

static const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
static const double LN2 = 0.6931471805599453094;

/* e^x in double for -104 <= x <= 89 (the float32 range), relative error about 1e-16. */
static double exp_d(double x) {
  double k = __builtin_rint(x * 1.4426950408889634074);
  double r = (x - k * LN2_HI) - k * LN2_LO;        /* |r| <= 0.347 */
  /* e^r by its Taylor series to r^13 / 13! (relative error below 1e-17 on |r| <= 0.347) */
  double p = 1.0 / 6227020800.0;
  static const double inv[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                               1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0,
                               0.5, 1.0, 1.0};
  for (int i = 0; i < 13; i++) p = p * r + inv[i];
  return p * pow2((int)k);
}

/* e^x in double over all of double's range (0 below -745, infinity above 709.8). */
double exp_f64(double x) {
  if (x != x) return x;
  if (x > 709.78) return __builtin_inf();
  if (x < -745.2) return 0.0;
  if (x < -708.0) return exp_d(x + 64.0) * 1.6038108905486379e-28;     /* e^-64: the subnormal results */
  return exp_d(x);
}

float exp_f32_1(float xf) {
  double x = xf;
  if (x != x) return xf;
  if (x > 89.0) return __builtin_inff();
  if (x < -104.0) return 0.0f;
  return (float)exp_d(x);
}

/* tanh in double, rounded once: the odd series to x^15 below |x| = 2^-4 (relative error below 1e-19), else
   1 - 2 / (e^2|x| + 1) (absolute error about 1e-16 of a result above 0.062); +-1 from |x| = 10 on. */
float tanh_f32_1(float xf) {
  double x = xf, a = x < 0.0 ? -x : x;
  if (x != x || x == 0.0) return xf;                /* NaN, and -0 stays -0 */
  double t;
  if (a >= 10.0) {
    t = 1.0;
  } else if (a < 0.0625) {
    static const double c[] = {-1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925,
                               21844.0 / 6081075, -929569.0 / 638512875};
    double a2 = a * a, p = c[6];
    for (int i = 5; i >= 0; i--) p = p * a2 + c[i];
    t = a + a * a2 * p;
  } else {
    t = 1.0 - 2.0 / (exp_d(2.0 * a) + 1.0);
  }
  return (float)(x < 0.0 ? -t : t);
}

float log_f32_1(float xf) {
  double x = xf;
  if (x != x) return xf;
  if (x < 0.0) return __builtin_nanf("");
  if (x == 0.0) return -__builtin_inff();
  if (x == __builtin_inf()) return xf;
  unsigned long long u = to_bits(x);               /* a float32 is a normal double: no subnormal case */
  int e = (int)((u >> 52) & 0x7ff) - 1023;
  double m = from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);   /* [1, 2) */
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e += 1;
  }
  /* log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716: the series to s^25 */
  double s = (m - 1.0) / (m + 1.0), s2 = s * s, p = 1.0 / 25.0;
  for (int k = 23; k >= 1; k -= 2) p = p * s2 + 1.0 / k;
  return (float)(2.0 * s * p + e * LN2);
}

/* Double-double products, without fused multiply-add (Dekker's split). */
typedef struct { double hi, lo; } dd;

static inline dd two_prod(double a, double b) {
  const double split = 134217729.0;               /* 2^27 + 1 */
  double p = a * b;
  double ta = split * a, tb = split * b;
  double ah = ta - (ta - a), al = a - ah, bh = tb - (tb - b), bl = b - bh;
  dd r = {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
  return r;
}

static inline dd dd_mul(dd x, dd y) {
  dd p = two_prod(x.hi, y.hi);
  double lo = p.lo + (x.hi * y.lo + x.lo * y.hi);
  double hi = p.hi + lo;
  dd r = {hi, lo - (hi - p.hi)};
  return r;
}

static inline dd dd_div1(dd y) {                   /* 1 / y */
  double q = 1.0 / y.hi;
  dd p = two_prod(q, y.hi);
  double rem = ((1.0 - p.hi) - p.lo) - q * y.lo;
  double q2 = rem / y.hi;
  double hi = q + q2;
  dd r = {hi, q2 - (hi - q)};
  return r;
}

/* a^t, as C's pow(a, (double)t) for a finite positive a (AdamW's alpha and beta); t may be negative. */
API double pow_f64_int(double a, long long t) {
  unsigned long long n = t < 0 ? -(unsigned long long)t : (unsigned long long)t;
  dd result = {1.0, 0.0}, base = {a, 0.0};
  while (n) {
    if (n & 1) result = dd_mul(result, base);
    n >>= 1;
    if (n) base = dd_mul(base, base);
    if (result.hi == 0.0 || result.hi - result.hi != 0.0) break;   /* underflow or overflow: settled */
  }
  if (t < 0) result = dd_div1(result);
  return result.hi + result.lo;
}

/* The element-wise forms, for the tests. */
API void tanh_f32(int n, const float *x, float *y) {
  for (int i = 0; i < n; i++) y[i] = tanh_f32_1(x[i]);
}

API void exp_f32(int n, const float *x, float *y) {
  for (int i = 0; i < n; i++) y[i] = exp_f32_1(x[i]);
}

API void log_f32(int n, const float *x, float *y) {
  for (int i = 0; i < n; i++) y[i] = log_f32_1(x[i]);
}
