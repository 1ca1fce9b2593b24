// The gradient of softmax cross-entropy with respect to the scores [N, C, D]:
// (exp(log_prob) - onehot(label)) * w * scale (+ bias), one invocation per element.  scale is dY[n, d] for the
// reduction "none", dY[0] for "sum", dY[0] / DEN[0] for "mean" (dY[0] when DEN[0] is 0).
// Parameters: 0 the size, 1 C, 2 D, 3 reduction (0 none, 1 sum, 2 mean), 4 has weights, 5 has ignore_index,
// 6 has bias.
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> LP: array<f32>;
@group(0) @binding(3) var<storage, read> L: array<i32>;
@group(0) @binding(4) var<storage, read> W: array<f32>;
@group(0) @binding(5) var<storage, read> IG: array<i32>;
@group(0) @binding(6) var<storage, read> DEN: array<f32>;
@group(0) @binding(7) var<storage, read> BIAS: array<f32>;
@group(0) @binding(8) var<storage, read_write> G: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let C = pu(1u);
  let D = pu(2u);
  let c = (i / D) % C;
  let row = (i / (C * D)) * D + i % D;
  let label = L[row];
  let ignored = pu(5u) != 0u && label == IG[0];
  let safe = u32(select(label, 0, ignored));
  var w = select(1.0, W[safe], pu(4u) != 0u);
  w = select(w, 0.0, ignored);
  let mode = pu(3u);
  var scale = DY[0];
  if (mode == 0u) { scale = DY[row]; }
  if (mode == 2u && DEN[0] != 0.0) { scale = scale / DEN[0]; }
  var grad = (exp(LP[i]) - select(0.0, 1.0, c == safe)) * (w * scale);
  if (pu(6u) != 0u) { grad = grad + BIAS[i]; }
  G[i] = grad;
}
