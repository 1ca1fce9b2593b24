// ArgMax / ArgMin along rows: the row w of a [outer, n, inner] view starts at (w / inner) * n * inner + w % inner
// and steps by inner.  Y[w] = the index of the row's best value (BETTER: strictly greater or less), its first or
// (LAST) last index among equals.  WIDE: a workgroup per row, each thread's best then a tree in workgroup memory;
// else a thread per row.  Parameters: 0 rows, 1 n, 2 inner, 3 LAST.
@group(0) @binding(1) var<storage, read> X: array<${T}>;
@group(0) @binding(2) var<storage, read_write> Y: array<i32>;

const WIDE = ${WIDE};
const NONE = 0xffffffffu;
var<workgroup> sv: array<${T}, 256>;
var<workgroup> si: array<u32, 256>;

fn better(v: ${T}, i: u32, bv: ${T}, bi: u32) -> bool {
  if (bi == NONE) { return i != NONE; }
  if (i == NONE) { return false; }
  if (v ${BETTER} bv) { return true; }
  return v == bv && select((i < bi), (i > bi), pu(3u) != 0u);
}

fn row_start(w: u32) -> u32 {
  return (w / pu(2u)) * pu(1u) * pu(2u) + w % pu(2u);
}

fn wide(w: u32, t: u32) {
  if (w >= pu(0u)) { return; }
  let start = row_start(w);
  let n = pu(1u);
  var bi = NONE;
  var bv: ${T};
  for (var j = t; j < n; j += 256u) {
    let v = X[start + j * pu(2u)];
    if (better(v, j, bv, bi)) { bv = v; bi = j; }
  }
  sv[t] = bv;
  si[t] = bi;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s && better(sv[t + s], si[t + s], sv[t], si[t])) {
      sv[t] = sv[t + s];
      si[t] = si[t + s];
    }
    workgroupBarrier();
  }
  if (t == 0u) { Y[w] = i32(si[0]); }
}

fn narrow(w: u32) {
  if (w >= pu(0u)) { return; }
  let start = row_start(w);
  let n = pu(1u);
  var bi = 0u;
  var bv = X[start];
  for (var j = 1u; j < n; j++) {
    let v = X[start + j * pu(2u)];
    if (better(v, j, bv, bi)) { bv = v; bi = j; }
  }
  Y[w] = i32(bi);
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
