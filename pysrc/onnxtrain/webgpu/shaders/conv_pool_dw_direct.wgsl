// Conv's weight gradient with one workgroup per element of dW (depthwise and other thin groups): the 256
// invocations take every 256th pixel in order, then add their sums in a fixed tree.  Parameters as
// conv_pool_dw.wgsl.
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read_write> D: array<f32>;

const TRANSPOSED = false;
var<workgroup> part: array<f32, 256>;

${GATHER}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let e = wg.x + wg.y * nw.x;
  let Q = pu(18u);
  let co = e / Q;
  let q = e % Q;
  let g = co / pu(17u);
  let hw = pu(5u) * pu(6u);
  var acc = 0.0;
  if (e < pu(22u)) {
    for (var j = t; j < pu(19u); j += 256u) {
      let n = j / hw;
      let pix = j % hw;
      acc += DY[(n * pu(4u) + co) * hw + pix] * gather(n, pix / pu(6u), pix % pu(6u), g, q);
    }
  }
  part[t] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s) { part[t] += part[t + s]; }
    workgroupBarrier();
  }
  if (t == 0u && e < pu(22u)) { D[e] = part[0]; }
}
