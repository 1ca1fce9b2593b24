// MaxPoolGrad, one invocation per input cell: the sum, over the windows that cover it in order, of the dY of
// those whose Indices name it (no scatter, no atomics).  Indices are flat row-major positions in dX, whatever
// MaxPool's storage_order (as the CPU kernel reads them).  Parameters: 0 inputs, 1 H, 2 W, 3 OH, 4 OW, 5 kH,
// 6 kW, 7 sh, 8 sw, 9 ph, 10 pw, 11 dh, 12 dw.
@group(0) @binding(1) var<storage, read> DY: array<f32>;
@group(0) @binding(2) var<storage, read> Indices: array<i32>;
@group(0) @binding(3) var<storage, read_write> DX: array<f32>;

// The windows (first, last) of one axis of length `outs` whose span covers position `p`.
fn covering(p: i32, pad: i32, stride: i32, extent: i32, outs: i32) -> vec2<i32> {
  let hi = min((p + pad) / stride, outs - 1);
  let lo = max(p + pad - extent + stride, 0) / stride;
  return vec2<i32>(lo, hi);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(gid, nw);
  if (i >= pu(0u)) { return; }
  let H = pu(1u);
  let W = pu(2u);
  let nc = i / (H * W);
  let h = (i / W) % H;
  let w = i % W;
  let me = i32(i);
  let rows = covering(i32(h), pi(9u), pi(7u), (pi(5u) - 1) * pi(11u) + 1, pi(3u));
  let cols = covering(i32(w), pi(10u), pi(8u), (pi(6u) - 1) * pi(12u) + 1, pi(4u));
  let base = nc * pu(3u) * pu(4u);
  var total = 0.0;
  for (var oh = rows.x; oh <= rows.y; oh++) {
    for (var ow = cols.x; ow <= cols.y; ow++) {
      let o = base + u32(oh) * pu(4u) + u32(ow);
      if (Indices[o] == me) { total += DY[o]; }
    }
  }
  DX[i] = total;
}
