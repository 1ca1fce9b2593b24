// Convolution as an implicit GEMM: Y[pixel, channel] = sum over k of In[pixel, k] * Wt[k, channel] (+ Bias), the
// In tile gathered from the input without an im2col buffer.  A workgroup computes 64 output pixels x 64 output
// channels of one group, each invocation 4 x 4 of them, through 16-deep tiles in workgroup memory.
// TRANSPOSED: a transposed convolution (ConvTranspose, Conv's input gradient): the input position of an output
// pixel and kernel offset is (out + pad - k * dilation) / stride where that divides; Wt is (Cin, Og, kH, kW).
// Otherwise in = out * stride - pad + k * dilation and Wt is (Cout, Rg, kH, kW).
// Parameters: 0 N, 1 Cin, 2 Hin, 3 Win, 4 Cout, 5 Hout, 6 Wout, 7 kH, 8 kW, 9 sh, 10 sw, 11 ph, 12 pw, 13 dh,
// 14 dw, 15 groups, 16 Rg (input channels per group), 17 Og (output channels per group), 18 K = Rg kH kW,
// 19 P = N Hout Wout, 20 channel tiles per group.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Wt: array<f32>;
@group(0) @binding(3) var<storage, read> Bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const TRANSPOSED: bool = ${TRANSPOSED};
const TM = 64u;
const TN = 64u;
const TK = 16u;
var<workgroup> As: array<f32, 1024>;   // [k][pixel]
var<workgroup> Bs: array<f32, 1024>;   // [k][channel]

${GATHER}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let tiles = pu(20u);
  let g = wg.y / tiles;
  let o0 = (wg.y % tiles) * TN;
  let p0 = (wg.x + wg.z * nw.x) * TM;
  let K = pu(18u);
  let P = pu(19u);
  let Og = pu(17u);
  let hw = pu(5u) * pu(6u);
  let lp = p0 + t % TM;
  let ln = lp / hw;
  let loh = (lp % hw) / pu(6u);
  let low = lp % pu(6u);
  let tx = t % 16u;
  let ty = t / 16u;
  var acc: array<array<f32, 4>, 4>;
  for (var k0 = 0u; k0 < K; k0 += TK) {
    for (var i = 0u; i < 4u; i++) {
      let ka = t / TM + 4u * i;
      var a = 0.0;
      if (lp < P && k0 + ka < K) { a = gather(ln, loh, low, g, k0 + ka); }
      As[ka * TM + t % TM] = a;
      let kb = t % TK;
      let ob = t / TK + 16u * i;
      var b = 0.0;
      if (k0 + kb < K && o0 + ob < Og) { b = weight(g, k0 + kb, o0 + ob); }
      Bs[kb * TN + ob] = b;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) {
        a[i] = As[kk * TM + tx + 16u * i];
        b[i] = Bs[kk * TN + ty + 16u * i];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i][j] += a[i] * b[j]; }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let p = p0 + tx + 16u * i;
    if (p >= P) { continue; }
    let n = p / hw;
    let pix = p % hw;
    for (var j = 0u; j < 4u; j++) {
      let o = o0 + ty + 16u * j;
      if (o >= Og) { continue; }
      let co = g * Og + o;
      Y[(n * pu(4u) + co) * hw + pix] = acc[i][j] + Bias[co];
    }
  }
}
