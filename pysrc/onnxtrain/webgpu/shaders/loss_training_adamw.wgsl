// AdamW on one parameter, in place, operation by operation as onnxruntime's CPU kernel (float32).  MODE 0:
// torch's AdamW (decay first, then the bias-corrected update); MODE 1: Hugging Face's (the update with the
// corrected lr, then decay with lr).  S holds [lr, ac, bc, lr_c, lr * wd] (loss_training_adamw_scalars).
// Parameters: 0 the size, 1 alpha, 2 beta, 3 epsilon, 4 weight_decay.
@group(0) @binding(1) var<storage, read> S: array<f32>;
@group(0) @binding(2) var<storage, read> G: array<f32>;
@group(0) @binding(3) var<storage, read_write> W: array<f32>;
@group(0) @binding(4) var<storage, read_write> M: array<f32>;
@group(0) @binding(5) var<storage, read_write> V: array<f32>;

const MODE = ${MODE}u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(gid, nw);
  if (i >= pu(0u)) { return; }
  let a = pf(1u);
  let b = pf(2u);
  let eps = pf(3u);
  let lr = S[0];
  let g = G[i];
  var w = W[i];
  if (MODE == 0u) { w = w - (w * lr) * pf(4u); }
  let m = M[i] * a + g * (1.0 - a);
  let v = V[i] * b + (g * (1.0 - b)) * g;
  if (MODE == 0u) {
    w = w - (m * lr) / ((sqrt(v / S[2]) + eps) * S[1]);
  } else {
    w = w - (m * S[3]) / (sqrt(v) + eps);
    w = w - w * S[4];
  }
  W[i] = w;
  M[i] = m;
  V[i] = v;
}
