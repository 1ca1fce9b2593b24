// SGD on one parameter, in place: W += G * -lr.  Parameters: 0 the size.
@group(0) @binding(1) var<storage, read> LR: array<f32>;
@group(0) @binding(2) var<storage, read> G: array<f32>;
@group(0) @binding(3) var<storage, read_write> W: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(gid, nw);
  if (i >= pu(0u)) { return; }
  W[i] = W[i] + G[i] * -LR[0];
}
