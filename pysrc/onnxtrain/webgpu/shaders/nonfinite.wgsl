// C[0] += how many of X's first pu(0) values are NaN or infinite (by their exponent bits: compilers may fold
// x != x away).
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<atomic<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  if ((X[i] & 0x7f800000u) == 0x7f800000u) { atomicAdd(&C[0], 1u); }
}
