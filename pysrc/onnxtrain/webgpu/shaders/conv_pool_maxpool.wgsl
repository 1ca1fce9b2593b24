// MaxPool, one invocation per output: the maximum of the window's cells inside the input (the first one wins a
// tie) and, with indices, its flat position in X (row-major, or column-major spatial part with storage_order).
// Parameters: 0 outputs, 1 H, 2 W, 3 OH, 4 OW, 5 kH, 6 kW, 7 sh, 8 sw, 9 ph, 10 pw, 11 dh, 12 dw,
// 13 storage_order.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
${INDICES_DECL}

// NaN counts as the maximum, the first one winning (as the CPU kernel); tested on the bits, which no compiler folds.
fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

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
  let minus_inf = 0xff800000u;   // a let: Chromium rejects a constant expression whose value is infinite
  var best = bitcast<f32>(minus_inf);
  var bh = h0;
  var bw = w0;
  for (var kh = 0; kh < pi(5u); kh++) {
    let h = h0 + kh * pi(11u);
    if (h < 0 || h >= H) { continue; }
    for (var kw = 0; kw < pi(6u); kw++) {
      let w = w0 + kw * pi(12u);
      if (w < 0 || w >= W) { continue; }
      let v = X[nc * u32(H * W) + u32(h * W + w)];
      if (v > best || (is_nan(v) && !is_nan(best))) {
        best = v;
        bh = h;
        bw = w;
      }
    }
  }
  Y[i] = best;
  ${INDICES_STORE}
}
