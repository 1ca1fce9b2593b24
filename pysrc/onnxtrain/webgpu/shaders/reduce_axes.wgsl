// Y[o] = FINAL(COMBINE over r of MAP(X[base(o) + offset(r)])), the kept index o and the reduced index r each
// walked over their dimensions with strides.  WIDE: a workgroup per output, its threads striding over r, then a
// tree in workgroup memory (a fixed order: deterministic); else a thread per output, r in order.  SHIFTED (log of
// a sum of exps): a first pass finds m, the max, and MAP and FINAL read it.
// CHUNKS > 1 (a first pass of two): output o covers the chunk o % CHUNKS of the reduced indices of kept index
// o / CHUNKS.
// Parameters: 0 outputs, 1 reduced count, 2 kept and 3 reduced dimensions, 4 the count as f32, 5 the identity of
// COMBINE and 6 that of max (bits of T), 7 CHUNKS, 8.. kept dims, 14.. kept strides, 20.. reduced dims,
// 26.. reduced strides (innermost first).
@group(0) @binding(1) var<storage, read> X: array<${T}>;
@group(0) @binding(2) var<storage, read_write> Y: array<${T}>;

const WIDE = ${WIDE};
const SHIFTED = ${SHIFTED};
var<workgroup> sh: array<${T}, 256>;

fn kept_offset(o: u32) -> u32 {
  var rest = o;
  var off = 0u;
  for (var d = 0u; d < pu(2u); d++) {
    off += (rest % pu(8u + d)) * pu(14u + d);
    rest /= pu(8u + d);
  }
  return off;
}

fn reduced_offset(r: u32) -> u32 {
  if (pu(3u) == 1u) { return r * pu(26u); }
  var rest = r;
  var off = 0u;
  for (var d = 0u; d < pu(3u); d++) {
    off += (rest % pu(20u + d)) * pu(26u + d);
    rest /= pu(20u + d);
  }
  return off;
}

// (the offset of output o's kept index, its first reduced index, the end of its reduced indices)
fn span(o: u32) -> vec3<u32> {
  let chunks = pu(7u);
  let n = pu(1u);
  let len = (n + chunks - 1u) / chunks;
  let lo = (o % chunks) * len;
  return vec3<u32>(kept_offset(o / chunks), lo, min(n, lo + len));
}

fn map_(x: ${T}, m: ${T}) -> ${T} { return ${MAP}; }
fn combine(a: ${T}, b: ${T}) -> ${T} { return ${COMBINE}; }
fn final_(acc: ${T}, m: ${T}) -> ${T} { return ${FINAL}; }
fn shift(mx: ${T}) -> ${T} { return ${SHIFT}; }

// The workgroup's 256 values combined (or their max), returned to every thread.
fn tree(v: ${T}, t: u32, is_max: bool) -> ${T} {
  sh[t] = v;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s) {
      sh[t] = select(combine(sh[t], sh[t + s]), max(sh[t], sh[t + s]), is_max);
    }
    workgroupBarrier();
  }
  let r = sh[0];
  workgroupBarrier();
  return r;
}

fn wide(o: u32, t: u32) {
  if (o >= pu(0u)) { return; }
  let s = span(o);
  let base = s.x;
  var m: ${T};
  if (SHIFTED) {
    var mx = bitcast<${T}>(pu(6u));
    for (var r = s.y + t; r < s.z; r += 256u) { mx = max(mx, X[base + reduced_offset(r)]); }
    m = shift(tree(mx, t, true));
  }
  var acc = bitcast<${T}>(pu(5u));
  for (var r = s.y + t; r < s.z; r += 256u) { acc = combine(acc, map_(X[base + reduced_offset(r)], m)); }
  acc = tree(acc, t, false);
  if (t == 0u) { Y[o] = final_(acc, m); }
}

fn narrow(o: u32) {
  if (o >= pu(0u)) { return; }
  let s = span(o);
  let base = s.x;
  var m: ${T};
  if (SHIFTED) {
    var mx = bitcast<${T}>(pu(6u));
    for (var r = s.y; r < s.z; r++) { mx = max(mx, X[base + reduced_offset(r)]); }
    m = shift(mx);
  }
  var acc = bitcast<${T}>(pu(5u));
  for (var r = s.y; r < s.z; r++) { acc = combine(acc, map_(X[base + reduced_offset(r)], m)); }
  Y[o] = final_(acc, m);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  if (WIDE) {
    wide(wg.x + wg.y * nw.x, t);
  } else {
    narrow(flat(g, nw));
  }
}
