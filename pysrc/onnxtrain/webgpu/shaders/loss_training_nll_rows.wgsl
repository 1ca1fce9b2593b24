// Negative log-likelihood, one invocation per row (n, d) of log-probabilities [N, C, D]: the row's loss
// -w * X[n, label, d] and its weight w (weights[label] or 1; 0 where the label is ignore_index).
// Parameters: 0 rows (N * D), 1 C, 2 D, 3 has weights, 4 has ignore_index.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> L: array<i32>;
@group(0) @binding(3) var<storage, read> W: array<f32>;
@group(0) @binding(4) var<storage, read> IG: array<i32>;
@group(0) @binding(5) var<storage, read_write> LOSS: array<f32>;
@group(0) @binding(6) var<storage, read_write> WROW: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let row = flat(g, nw);
  if (row >= pu(0u)) { return; }
  let C = pu(1u);
  let D = pu(2u);
  let label = L[row];
  let ignored = pu(4u) != 0u && label == IG[0];
  let safe = u32(select(label, 0, ignored));
  var w = select(1.0, W[safe], pu(3u) != 0u);
  w = select(w, 0.0, ignored);
  LOSS[row] = -X[(row / D) * C * D + safe * D + row % D] * w;
  WROW[row] = w;
}
