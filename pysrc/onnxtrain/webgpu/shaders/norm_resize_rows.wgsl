// LayerNormalization and InstanceNormalization: one workgroup of ${WG} per row of D values (deterministic: fixed
// strides, then a tree in workgroup memory).  Per row: mean, inv = 1/sqrt(mean((x - mean)^2) + epsilon), and
// Y = ${Y} (reading x, mean, inv, sd = sqrt(variance + epsilon), j the position in the row, row).
// Parameters: 0 rows, 1 D, 2 epsilon, 3 C (InstanceNormalization's channels), 4 size of SCALE, 5 size of BIAS.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> SCALE: array<f32>;
@group(0) @binding(3) var<storage, read> BIAS: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read_write> MEAN: array<f32>;
@group(0) @binding(6) var<storage, read_write> INV: array<f32>;

var<workgroup> partial: array<f32, ${WG}>;

fn workgroup_sum(v: f32, lid: u32) -> f32 {
  partial[lid] = v;
  workgroupBarrier();
  for (var s = ${WG}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nw.x;
  if (row >= pu(0u)) { return; }
  let D = pu(1u);
  let base = row * D;
  var acc = 0.0;
  for (var j = lid; j < D; j += ${WG}u) { acc += X[base + j]; }
  let mean = workgroup_sum(acc, lid) / f32(D);
  acc = 0.0;
  for (var j = lid; j < D; j += ${WG}u) {
    let d = X[base + j] - mean;
    acc += d * d;
  }
  let sd = sqrt(workgroup_sum(acc, lid) / f32(D) + pf(2u));
  let inv = 1.0 / sd;
  for (var j = lid; j < D; j += ${WG}u) {
    let x = X[base + j];
    Y[base + j] = ${Y};
  }
  if (lid == 0u) {
    MEAN[row] = mean;
    INV[row] = inv;
  }
}
