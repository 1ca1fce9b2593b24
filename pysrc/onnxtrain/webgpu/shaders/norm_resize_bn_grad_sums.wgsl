// BatchNormalizationGrad's per-channel sums, one workgroup per channel in a fixed order: dbias = sum(dY),
// dscale = sum(dY * (X - mean) * inv) over N*S.  X and dY are [N, C, S].  Parameters: 0 N, 1 C, 2 S.
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> MEAN: array<f32>;
@group(0) @binding(4) var<storage, read> INV: array<f32>;
@group(0) @binding(5) var<storage, read_write> DSCALE: array<f32>;
@group(0) @binding(6) var<storage, read_write> DBIAS: array<f32>;

var<workgroup> partial: array<vec2<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let c = wid.x + wid.y * nw.x;
  let C = pu(1u);
  if (c >= C) { return; }
  let S = pu(2u);
  let count = pu(0u) * S;
  let mean = MEAN[c];
  let inv = INV[c];
  var acc = vec2<f32>(0.0, 0.0);
  for (var i = lid; i < count; i += 256u) {
    let n = i / S;
    let at = (n * C + c) * S + (i - n * S);
    let dy = DY[at];
    acc += vec2<f32>(dy, dy * ((X[at] - mean) * inv));
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s / 2u) {
    if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) {
    DBIAS[c] = partial[0].x;
    DSCALE[c] = partial[0].y;
  }
}
