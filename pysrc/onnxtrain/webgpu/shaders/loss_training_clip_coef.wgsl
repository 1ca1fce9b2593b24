// InplaceClipGradNorm's coefficient min(max_norm / (sqrt(sum of PART) + 1e-6), 1), the partial sums added in a
// fixed order (deterministic).  Parameters: 0 partial sums, 1 max_norm.
@group(0) @binding(1) var<storage, read> PART: array<f32>;
@group(0) @binding(2) var<storage, read_write> COEF: array<f32>;

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  var s = 0.0;
  for (var i = t; i < pu(0u); i += 256u) { s += PART[i]; }
  red[t] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k = k / 2u) {
    if (t < k) { red[t] = red[t] + red[t + k]; }
    workgroupBarrier();
  }
  if (t == 0u) { COEF[0] = min(pf(1u) / (sqrt(red[0]) + 1e-6), 1.0); }
}
