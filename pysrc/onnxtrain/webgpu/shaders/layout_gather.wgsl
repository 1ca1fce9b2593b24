// Gather along an axis: X viewed as [outer, D, inner], I holds N indices (negative ones count from the end),
// Y as [outer, N, inner].  Parameters: 0 the size of Y, 1 inner, 2 N, 3 D.
@group(0) @binding(1) var<storage, read> X: array<${T}>;
@group(0) @binding(2) var<storage, read> I: array<i32>;
@group(0) @binding(3) var<storage, read_write> Y: array<${T}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let inner = pu(1u);
  let count = pu(2u);
  let d = pi(3u);
  let r = i % inner;
  let t = i / inner;
  var j = I[t % count];
  j = clamp(select(j, j + d, j < 0), 0, d - 1);
  Y[i] = X[((t / count) * u32(d) + u32(j)) * inner + r];
}
