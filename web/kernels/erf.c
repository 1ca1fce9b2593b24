/* The error function over float32, each element computed in double and rounded once: |x| <= 1 as
   x * SMALL(x * x), 1 < |x| < 4 as 1 - erfc(|x|) with erfc a polynomial on each half-unit piece, +-1 beyond 4
   (where float32's erf is 1), the sign (of -0.0 too) and NaN kept.  The tables are least-squares fits to Python's
   math.erf and math.erfc (tools/erf_fit.py prints them, with their errors below), so a result is the correctly
   rounded one except where erf lies within about 1e-15 of the midpoint of two float32 values. */
#include "kernels.h"

/* largest relative error of SMALL 2.9e-15, absolute of PIECES 1.2e-15 */
static const double SMALL[11] = {1.1283791670955132, -0.37612638903175005, 0.11283791670602798, -0.02686617058964723, 0.005223977175903794, -0.0008548305727652957, 0.00012054702266637047, -1.4913599532313178e-05, 1.6313000907515408e-06, -1.520123225222774e-07, 9.455532479787382e-09};
static const double PIECES[6][13] = {
  {0.07709987174354174, -0.05913028061181996, 0.018478212691194415, -0.002617746797991129, 2.4060172779461697e-05, 4.607523143764807e-05, -5.200506123910199e-06, -2.213143864038006e-07, 8.693974148330657e-08, -3.3446162196179767e-09, -7.568411567457535e-10, 7.457845841951097e-11, 3.194335075077166e-12},
  {0.013328328780817555, -0.013193748982538375, 0.005772265179859978, -0.0014087075736338057, 0.00018789925716065743, -6.469103177641077e-06, -2.1882434553453576e-06, 3.697974655184638e-07, -1.1139634005152733e-08, -3.412074114990133e-09, 4.2214945851883453e-10, 2.1373657570680937e-12, -4.030196122402137e-12},
  {0.0014627165866811496, -0.0017855797555045663, 0.001004388612471428, -0.0003394461514350058, 7.454446732941754e-05, -1.040788982643413e-05, 7.090715651330734e-07, 4.0921439776936435e-08, -1.5251105360647997e-08, 1.408984479954736e-09, 1.0996404151926697e-11, -1.5459403604224805e-11, 1.3079246849991016e-12},
  {0.00010062192211963722, -0.0001465693117733211, 0.00010076640184420585, -4.3131073520218685e-05, 1.2727006483561553e-05, -2.6912191259348054e-06, 4.046209443726933e-07, -3.9431308258724457e-08, 1.3582196492780169e-09, 2.7185721572016643e-10, -5.246522077873977e-11, 3.647340864702482e-12, 7.556444623400968e-14},
  {4.302779463675125e-06, -7.297256345920677e-06, 5.9290207810398955e-06, -3.0595267484828504e-06, 1.119411475588529e-06, -3.0644260868534216e-07, 6.433801371610203e-08, -1.037543308759107e-08, 1.2458439921177181e-09, -9.888599429815771e-11, 2.2209585551689578e-12, 7.090468255663344e-13, -1.1350695959367532e-13},
  {1.1372725656977701e-07, -2.2035804781080684e-07, 2.0658566982186975e-07, -1.2452525089494856e-07, 5.4067343242537916e-08, -1.794040590926228e-08, 4.705254443352626e-09, -9.933634662835647e-10, 1.698027501794385e-10, -2.3307144960619742e-11, 2.483478065037592e-12, -1.819945254898422e-13, 4.815082402389543e-15}
};

static double erf_abs(double a) {
  if (a <= 1.0) {
    double u = a * a, p = SMALL[10];
    for (int k = 9; k >= 0; k--) p = p * u + SMALL[k];
    return a * p;
  }
  if (a < 4.0) {
    int piece = (int)((a - 1.0) * 2.0);
    if (piece > 5) piece = 5;
    const double *c = PIECES[piece];
    double t = (a - (1.25 + 0.5 * piece)) * 4.0, p = c[12];
    for (int k = 11; k >= 0; k--) p = p * t + c[k];
    return 1.0 - p;
  }
  return a == a ? 1.0 : a;
}

API void erf_f32(int n, const float *x, float *y) {
  for (int i = 0; i < n; i++) {
    double v = x[i];
    y[i] = (float)__builtin_copysign(erf_abs(__builtin_fabs(v)), v);
  }
}

/* erf in double: the float32 kernel's below 4 (within about 3e-15 of math.erf), and from 4 to 6 1 - erfc with
   erfc by its continued fraction e^-a^2 / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / ...))) (relative error
   about 1e-15, so 1 - erfc is the double nearest erf, as math.erf's); 1 beyond, where erfc is below half a double's
   spacing at 1.  GELU needs the tail: 1 + erf(x / sqrt 2) keeps erfc's bits for x down to -8.4. */
double erf_f64(double v) {
  double a = __builtin_fabs(v), r;
  if (a < 4.0 || a >= 6.0 || a != a) {
    r = erf_abs(a);
  } else {
    double t = a;
    for (int k = 60; k >= 1; k--) t = a + (0.5 * k) / t;
    r = 1.0 - exp_f64(-a * a) / (1.7724538509055160 * t);
  }
  return __builtin_copysign(r, v);
}
