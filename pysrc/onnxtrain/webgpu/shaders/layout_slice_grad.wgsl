// SliceGrad: dX[i] = dY at i's place in the slice, 0 outside it.  Parameters: 0 the size of dX; from 1 dX's dims,
// the slice's starts, steps, lengths and dY's strides (${RANK} each, innermost first, i32).
@group(0) @binding(1) var<storage, read> dY: array<${T}>;
@group(0) @binding(2) var<storage, read_write> dX: array<${T}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  var rest = i;
  var src = 0;
  var inside = true;
  for (var d = 0u; d < ${RANK}u; d++) {
    let n = pu(1u + d);
    let r = i32(rest % n) - pi(1u + ${RANK}u + d);
    rest = rest / n;
    let step = pi(1u + 2u * ${RANK}u + d);
    let q = r / step;
    inside = inside && r % step == 0 && q >= 0 && q < pi(1u + 3u * ${RANK}u + d);
    src += q * pi(1u + 4u * ${RANK}u + d);
  }
  if (inside) {
    dX[i] = dY[src];
  } else {
    dX[i] = ${T}(0);
  }
}
