// LayerNormalizationGrad's dscale = sum over rows of dY * (X - mean) * inv and dbias = sum over rows of dY,
// per position j of a row.  A workgroup takes 32 positions; its 8 lanes each sum every 8th row in order, then a
// fixed tree adds the lanes (deterministic).  Parameters: 0 rows, 1 D.
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> MEAN: array<f32>;
@group(0) @binding(4) var<storage, read> INV: array<f32>;
@group(0) @binding(5) var<storage, read_write> DSCALE: array<f32>;
@group(0) @binding(6) var<storage, read_write> DBIAS: array<f32>;

var<workgroup> partial: array<vec2<f32>, 256>;

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let rows = pu(0u);
  let D = pu(1u);
  let j = (wid.x + wid.y * nw.x) * 32u + lid.x;
  var acc = vec2<f32>(0.0, 0.0);
  if (j < D) {
    for (var r = lid.y; r < rows; r += 8u) {
      let dy = DY[r * D + j];
      acc += vec2<f32>(dy * ((X[r * D + j] - MEAN[r]) * INV[r]), dy);
    }
  }
  let at = lid.y * 32u + lid.x;
  partial[at] = acc;
  workgroupBarrier();
  for (var s = 4u; s > 0u; s = s / 2u) {
    if (lid.y < s) { partial[at] = partial[at] + partial[at + s * 32u]; }
    workgroupBarrier();
  }
  if (lid.y == 0u && j < D) {
    DSCALE[j] = partial[lid.x].x;
    DBIAS[j] = partial[lid.x].y;
  }
}
