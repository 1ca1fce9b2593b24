// Partial sums of squares of one gradient, in a fixed order (deterministic): workgroup k of the pu(2) writes
// PART[pu(1) + k], the sum over elements k * 256 + t + j * 256 * pu(2) (invocation t, j = 0, 1, ...), tree-added.
// Parameters: 0 the size, 1 the first partial's index, 2 workgroups.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> PART: array<f32>;

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  var s = 0.0;
  for (var i = wid.x * 256u + t; i < pu(0u); i += 256u * pu(2u)) {
    let x = X[i];
    s += x * x;
  }
  red[t] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k = k / 2u) {
    if (t < k) { red[t] = red[t] + red[t + k]; }
    workgroupBarrier();
  }
  if (t == 0u) { PART[pu(1u) + wid.x] = red[0]; }
}
