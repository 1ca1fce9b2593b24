// The reduction of a loss over its rows, in one workgroup and a fixed order (deterministic): invocation t sums
// rows t, t + 256, ... in turn, then a tree adds the 256 partial sums.  Parameters: 0 rows, 1 mode: 1 the sum,
// 2 the mean (the sum / the summed weights; the sum when they are 0), 3 the mean (NaN when the weights are 0).
@group(0) @binding(1) var<storage, read> LOSS: array<f32>;
@group(0) @binding(2) var<storage, read> WROW: array<f32>;
@group(0) @binding(3) var<storage, read_write> OUT: array<f32>;

var<workgroup> sl: array<f32, 256>;
var<workgroup> sw: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  var a = 0.0;
  var b = 0.0;
  for (var i = t; i < pu(0u); i += 256u) {
    a += LOSS[i];
    b += WROW[i];
  }
  sl[t] = a;
  sw[t] = b;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s / 2u) {
    if (t < s) {
      sl[t] = sl[t] + sl[t + s];
      sw[t] = sw[t] + sw[t + s];
    }
    workgroupBarrier();
  }
  if (t == 0u) {
    let total = sl[0];
    let denom = sw[0];
    let mode = pu(1u);
    var out = total;
    if (mode >= 2u && denom != 0.0) { out = total / denom; }
    // NaN through a let: Chromium's WGSL compiler rejects a constant expression whose value is NaN
    let nan_bits = 0x7fc00000u;
    if (mode == 3u && denom == 0.0) { out = bitcast<f32>(nan_bits); }
    OUT[0] = out;
  }
}
