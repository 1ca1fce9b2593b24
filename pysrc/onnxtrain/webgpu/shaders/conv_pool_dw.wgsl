// Conv's weight gradient as a GEMM: dW[co, q] = sum over pixels j of dY[j, co] * In[j, q], q = (input channel in
// the group, kernel row, kernel column), In gathered from X as Conv reads it.  A workgroup computes 64 output
// channels x 64 q of one group over one chunk of the pixels (split K, wg.z), each invocation 4 x 4; the chunks'
// partial sums go to their own slices of D and are added in order by conv_pool_splits.wgsl.
// Parameters as conv_pool_gemm.wgsl with In = X (Cin = C, Rg = Cg) and Cout = M, Og = Mg, 18 Q = Cg kH kW;
// 20 channel tiles per group, 21 pixels per chunk, 22 the size of dW.
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read_write> D: array<f32>;

const TRANSPOSED = false;
const TM = 64u;
const TN = 64u;
const TK = 16u;
var<workgroup> As: array<f32, 1024>;   // [pixel][channel]
var<workgroup> Bs: array<f32, 1024>;   // [pixel][q]

${GATHER}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let tiles = pu(20u);
  let g = wg.y / tiles;
  let m0 = (wg.y % tiles) * TM;
  let q0 = wg.x * TN;
  let Q = pu(18u);
  let Mg = pu(17u);
  let hw = pu(5u) * pu(6u);
  let j0 = wg.z * pu(21u);
  let j1 = min(j0 + pu(21u), pu(19u));
  let tx = t % 16u;
  let ty = t / 16u;
  var acc: array<array<f32, 4>, 4>;
  for (var k0 = j0; k0 < j1; k0 += TK) {
    let j = k0 + t % TK;
    let n = j / hw;
    let pix = j % hw;
    for (var i = 0u; i < 4u; i++) {
      let r = t / TK + 16u * i;
      var a = 0.0;
      if (j < j1 && m0 + r < Mg) { a = DY[(n * pu(4u) + g * Mg + m0 + r) * hw + pix]; }
      As[(t % TK) * TM + r] = a;
      var b = 0.0;
      if (j < j1 && q0 + r < Q) { b = gather(n, pix / pu(6u), pix % pu(6u), g, q0 + r); }
      Bs[(t % TK) * TN + r] = b;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) {
        a[i] = As[kk * TM + ty + 16u * i];
        b[i] = Bs[kk * TN + tx + 16u * i];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var c = 0u; c < 4u; c++) { acc[i][c] += a[i] * b[c]; }
      }
    }
    workgroupBarrier();
  }
  let base = wg.z * pu(22u);
  for (var i = 0u; i < 4u; i++) {
    let m = m0 + ty + 16u * i;
    if (m >= Mg) { continue; }
    for (var c = 0u; c < 4u; c++) {
      let q = q0 + tx + 16u * c;
      if (q < Q) { D[base + (g * Mg + m) * Q + q] = acc[i][c]; }
    }
  }
}
