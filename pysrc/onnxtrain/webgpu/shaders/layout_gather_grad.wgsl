// GatherGrad: dX ([outer, D, inner]) gets the rows of dY ([outer, N, inner]) added at the indices I (N of
// them, negative ones counting from the end), in index order from zero as the CPU kernel adds them.
// Parameters: 0 the number of invocations, 1 inner, 2 N, 3 D, 4 the mode.  Mode 0: one invocation per element
// of dX, summing over all N indices.  Mode 1 (D > N; dX already zeroed): one invocation per element of dY,
// which writes the sum of its index's rows when it holds the index's first occurrence.
@group(0) @binding(1) var<storage, read> I: array<i32>;
@group(0) @binding(2) var<storage, read> dY: array<${T}>;
@group(0) @binding(3) var<storage, read_write> dX: array<${T}>;

fn index(n: u32, d: i32) -> i32 {
  let j = I[n];
  return select(j, j + d, j < 0);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let inner = pu(1u);
  let count = pu(2u);
  let d = pi(3u);
  let r = i % inner;
  let t = i / inner;
  if (pu(4u) == 0u) {
    let j = i32(t % u32(d));
    let row = (t / u32(d)) * count;
    var acc = ${T}(0);
    for (var n = 0u; n < count; n++) {
      if (index(n, d) == j) { acc += dY[(row + n) * inner + r]; }
    }
    dX[i] = acc;
    return;
  }
  let first = t % count;
  let j = index(first, d);
  for (var n = 0u; n < first; n++) {
    if (index(n, d) == j) { return; }
  }
  let row = (t / count) * count;
  var acc = ${T}(0);
  for (var n = first; n < count; n++) {
    if (index(n, d) == j) { acc += dY[(row + n) * inner + r]; }
  }
  if (j >= 0 && j < d) {
    dX[((t / count) * u32(d) + u32(j)) * inner + r] = acc;
  }
}
