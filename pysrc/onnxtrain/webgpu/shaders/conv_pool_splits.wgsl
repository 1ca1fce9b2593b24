// Y[i] = sum over s of D[s * n + i], s in order: the split-K partial sums of conv_pool_dw.wgsl.
// Parameters: 0 n, 1 the number of splits.
@group(0) @binding(1) var<storage, read> D: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(gid, nw);
  let n = pu(0u);
  if (i >= n) { return; }
  var acc = D[i];
  for (var s = 1u; s < pu(1u); s++) { acc += D[s * n + i]; }
  Y[i] = acc;
}
