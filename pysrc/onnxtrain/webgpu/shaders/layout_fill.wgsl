// Y[i] = the value whose bits are parameter 1.  Parameter 0: the size of Y.
@group(0) @binding(1) var<storage, read_write> Y: array<${T}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  Y[i] = bitcast<${T}>(pu(1u));
}
