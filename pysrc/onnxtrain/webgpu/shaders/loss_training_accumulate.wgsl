// InPlaceAccumulatorV2: B = V if the overwrite flag F[0] is set, else B + V, in place (V broadcast to B's shape).
// Parameters: 0 the size of B, 1 whether V needs broadcasting, 2 whether there is a flag, 3.. B's dims,
// 9.. V's strides (six each, innermost first, a broadcast dimension's stride 0).
@group(0) @binding(1) var<storage, read> V: array<f32>;
@group(0) @binding(2) var<storage, read> F: array<u32>;
@group(0) @binding(3) var<storage, read_write> B: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  var iv = i;
  if (pu(1u) != 0u) {
    var rest = i;
    iv = 0u;
    for (var d = 0u; d < 6u; d++) {
      let c = rest % pu(3u + d);
      rest = rest / pu(3u + d);
      iv += c * pu(9u + d);
    }
  }
  let v = V[iv];
  if (pu(2u) != 0u && F[0] != 0u) {
    B[i] = v;
  } else {
    B[i] = B[i] + v;
  }
}
