// Pad: Y[i] = X at the source position of i, or the constant pf/pi/pu(1) where mode 0 (constant) falls outside
// X.  Parameters: 0 the size of Y, 1 the constant's bits, 2 the mode (0 constant, 1 edge, 2 reflect, 3 wrap),
// 3 X's base offset (where a negative pad crops); from 4 Y's dims, X's dims (after cropping), the pads before
// and X's strides (${RANK} each, innermost first).
@group(0) @binding(1) var<storage, read> X: array<${T}>;
@group(0) @binding(2) var<storage, read_write> Y: array<${T}>;

fn source(s: i32, n: i32, mode: u32) -> i32 {
  if (mode == 1u) { return clamp(s, 0, n - 1); }
  if (mode == 3u) { return ((s % n) + n) % n; }
  if (n == 1) { return 0; }
  let period = 2 * (n - 1);       // reflect, repeated as numpy does for pads longer than the axis
  let m = ((s % period) + period) % period;
  return select(m, period - m, m >= n);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  let mode = pu(2u);
  var rest = i;
  var src = pi(3u);
  var inside = true;
  for (var d = 0u; d < ${RANK}u; d++) {
    let n = pu(4u + d);
    let c = i32(rest % n);
    rest = rest / n;
    let len = pi(4u + ${RANK}u + d);
    var s = c - pi(4u + 2u * ${RANK}u + d);
    if (s < 0 || s >= len) {
      if (mode == 0u) { inside = false; } else { s = source(s, len, mode); }
    }
    src += s * pi(4u + 3u * ${RANK}u + d);
  }
  if (inside) {
    Y[i] = X[src];
  } else {
    Y[i] = bitcast<${T}>(pu(1u));
  }
}
