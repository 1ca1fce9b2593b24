// Y[i] = f(X[i]) elementwise; ${EXPR} reads x (and the parameters from index 1).
@group(0) @binding(1) var<storage, read> X: array<${TX}>;
@group(0) @binding(2) var<storage, read_write> Y: array<${TY}>;
${FUNCTIONS}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let x = X[i];
  Y[i] = ${EXPR};
}
