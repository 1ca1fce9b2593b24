// Y[b] = epilogue(op(A)[b] @ op(B)[b]), an M x K times K x N product per batch b, tiled: a 64x64 block of Y per
// 16x16 workgroup, 4x4 outputs per invocation (rows l.y + 16i, columns l.x + 16j, so that neighbours read
// neighbouring words of the tiles and write neighbouring words of Y), K in steps of 16 through workgroup
// memory.  Each output is summed over k in ascending order, as matrix_small.wgsl does.
// Parameters: 0 M, 1 N, 2 K; A(m, k) at 3 (m stride), 4 (k stride); B(k, n) at 5 (k stride), 6 (n stride);
// C(m, n) at 7, 8; 9 alpha, 10 beta (f32); 11 the first batch of this dispatch (grid z counts from it);
// 12.. the batch dims, 18.. A's and 24.. B's batch strides (six each, innermost first).  Y is [batch, M, N].
@group(0) @binding(1) var<storage, read> A: array<${T}>;
@group(0) @binding(2) var<storage, read> B: array<${T}>;
${C_BINDING}
@group(0) @binding(${Y_BINDING}) var<storage, read_write> Y: array<${T}>;

const A_ALONG_K: bool = ${A_ALONG_K};   // A's k stride is 1: threads load its tile along k
const B_ALONG_K: bool = ${B_ALONG_K};   // B's k stride is 1
const S = 65u;                          // a tile row in workgroup memory, padded against bank conflicts
var<workgroup> As: array<${T}, 1040>;   // [k][m], 16 rows of S
var<workgroup> Bs: array<${T}, 1040>;   // [k][n]

fn batch_offsets(b: u32) -> vec2<u32> {
  var rest = b;
  var off = vec2<u32>(0u, 0u);
  for (var d = 0u; d < 6u; d++) {
    let c = rest % pu(12u + d);
    rest = rest / pu(12u + d);
    off += c * vec2<u32>(pu(18u + d), pu(24u + d));
  }
  return off;
}

fn epilogue(acc: ${T}, m: u32, n: u32) -> ${T} {
  ${EPILOGUE}
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
  let M = pu(0u);
  let N = pu(1u);
  let K = pu(2u);
  let b = wg.z + pu(11u);
  let off = batch_offsets(b);
  let row0 = wg.y * 64u;
  let col0 = wg.x * 64u;
  let t = l.y * 16u + l.x;
  var acc: array<array<${T}, 4>, 4>;
  for (var k0 = 0u; k0 < K; k0 += 16u) {
    for (var i = 0u; i < 4u; i++) {
      let idx = t + i * 256u;   // 1024 elements of each 64x16 tile
      var kk = idx / 64u;
      var mn = idx % 64u;
      if (A_ALONG_K) { kk = idx % 16u; mn = idx / 16u; }
      var a = ${T}(0);
      if (row0 + mn < M && k0 + kk < K) { a = A[off.x + (row0 + mn) * pu(3u) + (k0 + kk) * pu(4u)]; }
      As[kk * S + mn] = a;
      kk = idx / 64u;
      mn = idx % 64u;
      if (B_ALONG_K) { kk = idx % 16u; mn = idx / 16u; }
      var v = ${T}(0);
      if (col0 + mn < N && k0 + kk < K) { v = B[off.y + (k0 + kk) * pu(5u) + (col0 + mn) * pu(6u)]; }
      Bs[kk * S + mn] = v;
    }
    workgroupBarrier();
    let steps = min(16u, K - k0);
    for (var k = 0u; k < steps; k++) {
      var a: array<${T}, 4>;
      var v: array<${T}, 4>;
      for (var i = 0u; i < 4u; i++) {
        a[i] = As[k * S + l.y + 16u * i];
        v[i] = Bs[k * S + l.x + 16u * i];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i][j] += a[i] * v[j]; }
      }
    }
    workgroupBarrier();
  }
  let base = b * M * N;
  for (var i = 0u; i < 4u; i++) {
    let m = row0 + l.y + 16u * i;
    for (var j = 0u; j < 4u; j++) {
      let n = col0 + l.x + 16u * j;
      if (m < M && n < N) { Y[base + m * N + n] = epilogue(acc[i][j], m, n); }
    }
  }
}
