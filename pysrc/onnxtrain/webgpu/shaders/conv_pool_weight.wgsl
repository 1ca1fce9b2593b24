// (A fragment conv_pool_gemm.wgsl and conv_pool_direct.wgsl include after conv_pool_gather.wgsl.)
// The weight of reduction index k and output channel o of group g.
fn weight(g: u32, k: u32, o: u32) -> f32 {
  if (TRANSPOSED) {
    let kk = pu(7u) * pu(8u);
    return Wt[((g * pu(16u) + k / kk) * pu(17u) + o) * kk + k % kk];
  }
  return Wt[(g * pu(17u) + o) * pu(18u) + k];
}
