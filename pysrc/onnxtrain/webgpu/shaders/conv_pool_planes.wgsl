// Y[o] = combine over n < N2 and i < L of X[(n * C2 + o) * L + i], divided by pf(4u); one workgroup per output,
// its 256 invocations taking every 256th element in order, then combining in a fixed tree (the bias gradient,
// the global pools).  Parameters: 0 outputs, 1 C2, 2 N2, 3 L, 4 the divisor.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;

var<workgroup> part: array<f32, 256>;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
// max that propagates NaN, as numpy's (WGSL's max leaves NaN to the implementation)
fn max_nan(a: f32, b: f32) -> f32 { return select(select(max(a, b), b, is_nan(b)), a, is_nan(a)); }
fn combine(a: f32, b: f32) -> f32 { return ${COMBINE}; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let o = wg.x + wg.y * nw.x;
  let L = pu(3u);
  var acc = ${INIT};
  if (o < pu(0u)) {
    for (var j = t; j < pu(2u) * L; j += 256u) {
      acc = combine(acc, X[((j / L) * pu(1u) + o) * L + j % L]);
    }
  }
  part[t] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s) { part[t] = combine(part[t], part[t + s]); }
    workgroupBarrier();
  }
  if (t == 0u && o < pu(0u)) { Y[o] = part[0] / pf(4u); }
}
