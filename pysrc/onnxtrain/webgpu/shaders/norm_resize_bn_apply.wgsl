// Y = (X - mean[c]) * (inv[c] * scale[c]) + bias[c] over X [N, C, S]; ${INV} gives inv[c] from STAT: the saved
// 1/std (training) or the running variance (inference).  Parameters: 0 the size of X, 1 C, 2 S, 3 epsilon.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> SCALE: array<f32>;
@group(0) @binding(3) var<storage, read> BIAS: array<f32>;
@group(0) @binding(4) var<storage, read> MEAN: array<f32>;
@group(0) @binding(5) var<storage, read> STAT: array<f32>;
@group(0) @binding(6) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let c = (i / pu(2u)) % pu(1u);
  let inv = ${INV};
  Y[i] = (X[i] - MEAN[c]) * (inv * SCALE[c]) + BIAS[c];
}
