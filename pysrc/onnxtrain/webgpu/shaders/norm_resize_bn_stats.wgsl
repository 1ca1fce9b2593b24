// BatchNormalization's batch statistics, one workgroup per channel (deterministic: each invocation sums a fixed
// stride of the channel's N*S values, then a tree in workgroup memory).  X is [N, C, S].  Parameters: 0 N, 1 C,
// 2 S, 3 epsilon, 4 momentum.  Writes the batch mean, 1/sqrt(batch variance + epsilon) and the running mean and
// variance updated with the momentum.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> RUN_MEAN: array<f32>;
@group(0) @binding(3) var<storage, read> RUN_VAR: array<f32>;
@group(0) @binding(4) var<storage, read_write> MEAN: array<f32>;
@group(0) @binding(5) var<storage, read_write> INV: array<f32>;
@group(0) @binding(6) var<storage, read_write> NEW_MEAN: array<f32>;
@group(0) @binding(7) var<storage, read_write> NEW_VAR: array<f32>;

var<workgroup> partial: array<f32, 256>;

fn workgroup_sum(v: f32, lid: u32) -> f32 {
  partial[lid] = v;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s / 2u) {
    if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let c = wid.x + wid.y * nw.x;
  let C = pu(1u);
  if (c >= C) { return; }
  let S = pu(2u);
  let count = pu(0u) * S;
  var acc = 0.0;
  for (var i = lid; i < count; i += 256u) {
    let n = i / S;
    acc += X[(n * C + c) * S + (i - n * S)];
  }
  let mean = workgroup_sum(acc, lid) / f32(count);
  acc = 0.0;
  for (var i = lid; i < count; i += 256u) {
    let n = i / S;
    let d = X[(n * C + c) * S + (i - n * S)] - mean;
    acc += d * d;
  }
  let variance = workgroup_sum(acc, lid) / f32(count);
  if (lid == 0u) {
    let m = pf(4u);
    MEAN[c] = mean;
    INV[c] = 1.0 / sqrt(variance + pf(3u));
    NEW_MEAN[c] = RUN_MEAN[c] * m + mean * (1.0 - m);
    NEW_VAR[c] = RUN_VAR[c] * m + variance * (1.0 - m);
  }
}
