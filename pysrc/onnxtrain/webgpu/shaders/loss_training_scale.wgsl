// X *= COEF[0], in place.  Parameters: 0 the size.
@group(0) @binding(1) var<storage, read> COEF: array<f32>;
@group(0) @binding(2) var<storage, read_write> X: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(gid, nw);
  if (i >= pu(0u)) { return; }
  X[i] = X[i] * COEF[0];
}
