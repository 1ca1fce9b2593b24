// The summed weights of the labels (weights[label] or 1; 0 where the label is ignore_index), in one workgroup and
// a fixed order (deterministic).  Parameters: 0 rows, 1 has weights, 2 has ignore_index.
@group(0) @binding(1) var<storage, read> L: array<i32>;
@group(0) @binding(2) var<storage, read> W: array<f32>;
@group(0) @binding(3) var<storage, read> IG: array<i32>;
@group(0) @binding(4) var<storage, read_write> OUT: array<f32>;

var<workgroup> sw: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  var b = 0.0;
  for (var i = t; i < pu(0u); i += 256u) {
    let label = L[i];
    let ignored = pu(2u) != 0u && label == IG[0];
    let w = select(1.0, W[u32(select(label, 0, ignored))], pu(1u) != 0u);
    b += select(w, 0.0, ignored);
  }
  sw[t] = b;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s / 2u) {
    if (t < s) { sw[t] = sw[t] + sw[t + s]; }
    workgroupBarrier();
  }
  if (t == 0u) { OUT[0] = sw[0]; }
}
