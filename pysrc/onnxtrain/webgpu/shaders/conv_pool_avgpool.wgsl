// AveragePool, one invocation per output: the window's cells inside the input added in order, divided by their
// count, or by the window's size with count_include_pad.  Parameters as conv_pool_maxpool.wgsl, with
// 13 count_include_pad.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(gid, nw);
  if (i >= pu(0u)) { return; }
  let H = pi(1u);
  let W = pi(2u);
  let ohw = pu(3u) * pu(4u);
  let nc = i / ohw;
  let h0 = i32(((i % ohw) / pu(4u)) * pu(7u)) - pi(9u);
  let w0 = i32((i % pu(4u)) * pu(8u)) - pi(10u);
  var total = 0.0;
  var count = 0.0;
  for (var kh = 0; kh < pi(5u); kh++) {
    let h = h0 + kh * pi(11u);
    if (h < 0 || h >= H) { continue; }
    for (var kw = 0; kw < pi(6u); kw++) {
      let w = w0 + kw * pi(12u);
      if (w < 0 || w >= W) { continue; }
      total += X[nc * u32(H * W) + u32(h * W + w)];
      count += 1.0;
    }
  }
  if (pu(13u) != 0u) { count = f32(pu(5u) * pu(6u)); }
  Y[i] = total / count;
}
