// Y[i] = C[.] != 0 ? A[.] : B[.] with numpy broadcasting.  Parameters: 0 the size of Y; 2.. Y's dims, 8.. C's,
// 14.. A's, 20.. B's strides (six each, innermost first).
@group(0) @binding(1) var<storage, read> C: array<u32>;
@group(0) @binding(2) var<storage, read> A: array<${T}>;
@group(0) @binding(3) var<storage, read> B: array<${T}>;
@group(0) @binding(4) var<storage, read_write> Y: array<${T}>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  var rest = i;
  var ic = 0u;
  var ia = 0u;
  var ib = 0u;
  for (var d = 0u; d < 6u; d++) {
    let c = rest % pu(2u + d);
    rest = rest / pu(2u + d);
    ic += c * pu(8u + d);
    ia += c * pu(14u + d);
    ib += c * pu(20u + d);
  }
  Y[i] = select(B[ib], A[ia], C[ic] != 0u);
}
