// Y[i] = f(A[.], B[.]) with numpy broadcasting.  Parameters: 0 the size of Y; 2.. Y's dims, 8.. A's strides,
// 14.. B's strides (six each, innermost first, a broadcast dimension's stride 0); 20.. what ${EXPR} reads.
@group(0) @binding(1) var<storage, read> A: array<${TA}>;
@group(0) @binding(2) var<storage, read> B: array<${TB}>;
@group(0) @binding(3) var<storage, read_write> Y: array<${TY}>;
${FUNCTIONS}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  var ia = i;
  var ib = i;
  if (pu(1u) != 0u) {
    var rest = i;
    ia = 0u;
    ib = 0u;
    for (var d = 0u; d < 6u; d++) {
      let c = rest % pu(2u + d);
      rest = rest / pu(2u + d);
      ia += c * pu(8u + d);
      ib += c * pu(14u + d);
    }
  }
  let a = A[ia];
  let b = B[ib];
  Y[i] = ${EXPR};
}
