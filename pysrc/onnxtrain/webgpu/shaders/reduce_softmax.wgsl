// Softmax-like ops along rows: the row w of a [outer, n, inner] view starts at (w / inner) * n * inner + w % inner
// and steps by inner.  SHIFTED: m = the row's max (else 0); s = the sum of TERM(a, b, m) over the row;
// Y = OUT(a, b, m, s) elementwise, a from A and b from B (when the op has B).  WIDE: a workgroup per row, with
// trees in workgroup memory (a fixed order: deterministic); else a thread per row.
// Parameters: 0 rows, 1 n, 2 inner, 3 the identity of max (-inf).
@group(0) @binding(1) var<storage, read> A: array<f32>;
${BINDINGS}
const WIDE = ${WIDE};
const SHIFTED = ${SHIFTED};
var<workgroup> sh: array<f32, 256>;

fn b_at(i: u32) -> f32 { return ${LOAD_B}; }
fn term(a: f32, b: f32, m: f32) -> f32 { return ${TERM}; }
fn out(a: f32, b: f32, m: f32, s: f32) -> f32 { return ${OUT}; }

fn row_start(w: u32) -> u32 {
  return (w / pu(2u)) * pu(1u) * pu(2u) + w % pu(2u);
}

fn tree(v: f32, t: u32, is_max: bool) -> f32 {
  sh[t] = v;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s) {
      sh[t] = select(sh[t] + sh[t + s], max(sh[t], sh[t + s]), is_max);
    }
    workgroupBarrier();
  }
  let r = sh[0];
  workgroupBarrier();
  return r;
}

fn wide(w: u32, t: u32) {
  if (w >= pu(0u)) { return; }
  let start = row_start(w);
  let n = pu(1u);
  let step = pu(2u);
  var m = 0.0;
  if (SHIFTED) {
    var mx = pf(3u);
    for (var j = t; j < n; j += 256u) { mx = max(mx, A[start + j * step]); }
    m = tree(mx, t, true);
  }
  var s = 0.0;
  for (var j = t; j < n; j += 256u) {
    let i = start + j * step;
    s += term(A[i], b_at(i), m);
  }
  s = tree(s, t, false);
  for (var j = t; j < n; j += 256u) {
    let i = start + j * step;
    Y[i] = out(A[i], b_at(i), m, s);
  }
}

fn narrow(w: u32) {
  if (w >= pu(0u)) { return; }
  let start = row_start(w);
  let n = pu(1u);
  let step = pu(2u);
  var m = 0.0;
  if (SHIFTED) {
    var mx = pf(3u);
    for (var j = 0u; j < n; j++) { mx = max(mx, A[start + j * step]); }
    m = mx;
  }
  var s = 0.0;
  for (var j = 0u; j < n; j++) {
    let i = start + j * step;
    s += term(A[i], b_at(i), m);
  }
  for (var j = 0u; j < n; j++) {
    let i = start + j * step;
    Y[i] = out(A[i], b_at(i), m, s);
  }
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
