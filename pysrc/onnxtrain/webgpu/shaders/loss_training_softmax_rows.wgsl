// Softmax cross-entropy, one workgroup per row (n, d) of scores [N, C, D] (the workgroup's index spread over x
// and y): the row's log-probabilities (when WRITE_LP), its loss -w * log_prob[label] and its weight w (weights[label]
// or 1; 0 where the label is ignore_index).  Parameters: 0 rows (N * D), 1 C, 2 D, 3 has weights, 4 has ignore_index.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> L: array<i32>;
@group(0) @binding(3) var<storage, read> W: array<f32>;
@group(0) @binding(4) var<storage, read> IG: array<i32>;
@group(0) @binding(5) var<storage, read_write> LP: array<f32>;
@group(0) @binding(6) var<storage, read_write> LOSS: array<f32>;
@group(0) @binding(7) var<storage, read_write> WROW: array<f32>;

const WG = ${WG}u;
const WRITE_LP = ${WRITE_LP};
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let row = wid.x + wid.y * nw.x;
  if (row >= pu(0u)) { return; }
  let C = pu(1u);
  let D = pu(2u);
  let base = (row / D) * C * D + row % D;
  var m = -3.4028234663852886e38;
  for (var c = t; c < C; c += WG) { m = max(m, X[base + c * D]); }
  red[t] = m;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (t < s) { red[t] = max(red[t], red[t + s]); }
    workgroupBarrier();
  }
  let mx = red[0];
  workgroupBarrier();
  var e = 0.0;
  for (var c = t; c < C; c += WG) { e += exp(X[base + c * D] - mx); }
  red[t] = e;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (t < s) { red[t] = red[t] + red[t + s]; }
    workgroupBarrier();
  }
  let lse = log(red[0]);
  if (WRITE_LP) {
    for (var c = t; c < C; c += WG) { LP[base + c * D] = (X[base + c * D] - mx) - lse; }
  }
  if (t == 0u) {
    let label = L[row];
    let ignored = pu(4u) != 0u && label == IG[0];
    let safe = u32(select(label, 0, ignored));
    var w = select(1.0, W[safe], pu(3u) != 0u);
    w = select(w, 0.0, ignored);
    LOSS[row] = -((X[base + safe * D] - mx) - lse) * w;
    WROW[row] = w;
  }
}
