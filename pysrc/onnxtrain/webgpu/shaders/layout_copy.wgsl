// Y[dst(i)] = X[src(i)] over an index space of ${RANK} dimensions: the strided copy behind Transpose, Slice,
// Expand, Tile, Concat and Split.  Parameters: 0 the number of elements, 1 X's base offset, 2 Y's base offset
// (i32); from 3 the dims, then X's strides, then Y's strides (${RANK} each, innermost first, strides i32: a
// broadcast dimension's stride is 0, a reversed one's negative).
@group(0) @binding(1) var<storage, read> X: array<${T}>;
@group(0) @binding(2) var<storage, read_write> Y: array<${T}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(g, nw);
  if (i >= pu(0u)) { return; }
  var rest = i;
  var src = pi(1u);
  var dst = pi(2u);
  for (var d = 0u; d < ${RANK}u; d++) {
    let n = pu(3u + d);
    let c = i32(rest % n);
    rest = rest / n;
    src += c * pi(3u + ${RANK}u + d);
    dst += c * pi(3u + 2u * ${RANK}u + d);
  }
  Y[dst] = X[src];
}
