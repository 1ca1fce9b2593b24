// Y[b] = epilogue(op(A)[b] @ op(B)[b]) with one invocation per output, for products with few rows or columns
// (a 64x64 tile of matrix_tiled.wgsl would be mostly idle).  Each output is summed over k in ascending order,
// as matrix_tiled.wgsl does.  Parameters as matrix_tiled.wgsl's, and 30 the number of outputs.
@group(0) @binding(1) var<storage, read> A: array<${T}>;
@group(0) @binding(2) var<storage, read> B: array<${T}>;
${C_BINDING}
@group(0) @binding(${Y_BINDING}) var<storage, read_write> Y: array<${T}>;

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

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(30u)) { return; }
  let M = pu(0u);
  let N = pu(1u);
  let r = i % (M * N);
  let m = r / N;
  let n = r % N;
  let off = batch_offsets(i / (M * N));
  var pa = off.x + m * pu(3u);
  var pb = off.y + n * pu(6u);
  var acc = ${T}(0);
  for (var k = 0u; k < pu(2u); k++) {
    acc += A[pa] * B[pb];
    pa += pu(4u);
    pb += pu(5u);
  }
  Y[i] = epilogue(acc, m, n);
}
