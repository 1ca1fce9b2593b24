// LayerNormalizationGrad's dX, one workgroup of ${WG} per row of D values: with x_hat = (x - mean) * inv and
// g = dY * scale, dX = inv * (g - mean(g) - x_hat * mean(g * x_hat)); the two means in a fixed order.
// Parameters: 0 rows, 1 D, 2 size of SCALE.
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> SCALE: array<f32>;
@group(0) @binding(4) var<storage, read> MEAN: array<f32>;
@group(0) @binding(5) var<storage, read> INV: array<f32>;
@group(0) @binding(6) var<storage, read_write> DX: array<f32>;

var<workgroup> partial: array<vec2<f32>, ${WG}>;

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nw.x;
  if (row >= pu(0u)) { return; }
  let D = pu(1u);
  let ss = pu(2u);
  let base = row * D;
  let mean = MEAN[row];
  let inv = INV[row];
  var acc = vec2<f32>(0.0, 0.0);
  for (var j = lid; j < D; j += ${WG}u) {
    let g = DY[base + j] * SCALE[j % ss];
    acc += vec2<f32>(g, g * ((X[base + j] - mean) * inv));
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = ${WG}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
    workgroupBarrier();
  }
  let m = partial[0] / f32(D);
  for (var j = lid; j < D; j += ${WG}u) {
    let g = DY[base + j] * SCALE[j % ss];
    let x_hat = (X[base + j] - mean) * inv;
    DX[base + j] = inv * (g - m.x - x_hat * m.y);
  }
}
