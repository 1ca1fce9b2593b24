// dX = (scale * inv) / n * (n * dY - dbias - x_hat * dscale), x_hat = (X - mean) * inv, per channel c of
// X [N, C, S], n = N*S.  Parameters: 0 the size of X, 1 C, 2 S, 3 n (f32).
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> SCALE: array<f32>;
@group(0) @binding(4) var<storage, read> MEAN: array<f32>;
@group(0) @binding(5) var<storage, read> INV: array<f32>;
@group(0) @binding(6) var<storage, read> DSCALE: array<f32>;
@group(0) @binding(7) var<storage, read> DBIAS: array<f32>;
@group(0) @binding(8) var<storage, read_write> DX: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let c = (i / pu(2u)) % pu(1u);
  let n = pf(3u);
  let inv = INV[c];
  let x_hat = (X[i] - MEAN[c]) * inv;
  DX[i] = (SCALE[c] * inv) / n * (n * DY[i] - DBIAS[c] - x_hat * DSCALE[c]);
}
