// AdamW's step scalars from the fed lr and step, as onnxruntime's CPU kernel: S = [lr, ac, bc, lr_c, lr * wd] with
// ac = 1 - alpha^step, bc = 1 - beta^step (1 without bias correction) and lr_c = lr * (sqrt(bc) / ac).
// onnxruntime raises to the power in double and rounds to float; here the power is taken by squaring in
// float-float arithmetic (about 44 bits), then rounded to f32: the same f32 but for rare near-ties (3 in 35000
// (beta, step) pairs emulated in numpy; plain f32 squaring is off by up to 2e-5 relative in 1 - 0.999^step).
// Parameters: 0 alpha, 1 beta, 2 weight_decay, 3 correct_bias.
@group(0) @binding(1) var<storage, read> LR: array<f32>;
@group(0) @binding(2) var<storage, read> STEP: array<i32>;
@group(0) @binding(3) var<storage, read_write> S: array<f32>;

// x = hi + lo, hi the upper 12 bits of the significand.  A mask rather than Veltkamp's split: a compiler that
// simplifies float algebra (Mesa's does) would fold c - (c - x) to x.
fn split(x: f32) -> vec2<f32> {
  let hi = bitcast<f32>(bitcast<u32>(x) & 0xfffff000u);
  return vec2<f32>(hi, x - hi);
}

// a * b exactly, as p + e (Dekker's product: the halves' products are exact).
fn two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = a * b;
  let sa = split(a);
  let sb = split(b);
  let e = ((sa.x * sb.x - p) + sa.x * sb.y + sa.y * sb.x) + sa.y * sb.y;
  return vec2<f32>(p, e);
}

// x * y for float-float numbers; the low part stays within a few ulps of the high one, so no renormalization
// (whose fast two-sum a simplifying compiler would also fold away).
fn ff_mul(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
  let p = two_prod(x.x, y.x);
  return vec2<f32>(p.x, p.y + (x.x * y.y + x.y * y.x));
}

fn power(a: f32, n: i32) -> f32 {
  var r = vec2<f32>(1.0, 0.0);
  var b = vec2<f32>(a, 0.0);
  var e = u32(abs(n));
  loop {
    if (e == 0u) { break; }
    if ((e & 1u) != 0u) { r = ff_mul(r, b); }
    b = ff_mul(b, b);
    e = e >> 1u;
  }
  let v = r.x + r.y;
  return select(v, 1.0 / v, n < 0);
}

@compute @workgroup_size(1)
fn main() {
  let lr = LR[0];
  var ac = 1.0;
  var bc = 1.0;
  var lr_c = lr;
  if (pu(3u) != 0u) {
    let t = STEP[0];
    ac = 1.0 - power(pf(0u), t);
    bc = 1.0 - power(pf(1u), t);
    lr_c = lr * (sqrt(bc) / ac);
  }
  S[0] = lr;
  S[1] = ac;
  S[2] = bc;
  S[3] = lr_c;
  S[4] = lr * pf(2u);
}
