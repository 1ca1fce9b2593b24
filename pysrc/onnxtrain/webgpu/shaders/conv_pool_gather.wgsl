// (A fragment the conv_pool shaders include as ${GATHER}; it needs their constant TRANSPOSED.)
// The input element that reduction index k (input channel in the group, kernel row, kernel column) meets at
// output pixel (n, oh, ow) of group g; 0 on padding.
fn gather(n: u32, oh: u32, ow: u32, g: u32, k: u32) -> f32 {
  let kk = pu(7u) * pu(8u);
  let r = k / kk;
  let kh = (k % kk) / pu(8u);
  let kw = k % pu(8u);
  var ih: i32;
  var iw: i32;
  if (TRANSPOSED) {
    let th = i32(oh) + pi(11u) - i32(kh * pu(13u));
    let tw = i32(ow) + pi(12u) - i32(kw * pu(14u));
    if (th < 0 || tw < 0 || u32(th) % pu(9u) != 0u || u32(tw) % pu(10u) != 0u) { return 0.0; }
    ih = th / pi(9u);
    iw = tw / pi(10u);
  } else {
    ih = i32(oh * pu(9u) + kh * pu(13u)) - pi(11u);
    iw = i32(ow * pu(10u) + kw * pu(14u)) - pi(12u);
  }
  if (ih < 0 || iw < 0 || ih >= pi(2u) || iw >= pi(3u)) { return 0.0; }
  return X[((n * pu(1u) + g * pu(16u) + r) * pu(2u) + u32(ih)) * pu(3u) + u32(iw)];
}
