// Resize along one axis of X [outer, in_len, inner] -> Y [outer, out_len, inner]: output position o is the
// weighted sum of SPAN[2o + 1] consecutive inputs from SPAN[2o], with weights W[o * taps ..] (the rows of the
// CPU kernel's interpolation matrix, nonzero span only).  Parameters: 0 the size of Y, 1 inner, 2 out_len,
// 3 in_len, 4 taps (the longest span).
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> SPAN: array<i32>;
@group(0) @binding(3) var<storage, read> W: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let inner = pu(1u);
  let out_len = pu(2u);
  let k = i % inner;
  let rest = i / inner;
  let o = rest % out_len;
  let src = (rest / out_len) * pu(3u);
  let first = u32(SPAN[2u * o]);
  let count = u32(SPAN[2u * o + 1u]);
  let w = o * pu(4u);
  var acc = 0.0;
  for (var t = 0u; t < count; t++) {
    acc += W[w + t] * X[(src + first + t) * inner + k];
  }
  Y[i] = acc;
}
