// A transpose through workgroup memory, 32 x 32 tiles: Y's innermost dimension (length pu(0), stride pu(2) in X)
// against X's innermost (dimension p of Y, length pu(1), stride pu(3) in Y), so that both the reads and the
// writes are coalesced; workgroups x and y run over the tiles, z over the other ${RB} dimensions ("batch").
// Parameters: 0..3 as above, then the batch dims, their strides in X and in Y (${RB} each, innermost first).
@group(0) @binding(1) var<storage, read> X: array<${T}>;
@group(0) @binding(2) var<storage, read_write> Y: array<${T}>;

var<workgroup> tile: array<array<${T}, 33>, 32>;

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
  let n0 = pu(0u);
  let np = pu(1u);
  var rest = w.z;
  var src = 0u;
  var dst = 0u;
  for (var d = 0u; d < ${RB}u; d++) {
    let n = pu(4u + d);
    let c = rest % n;
    rest = rest / n;
    src += c * pu(4u + ${RB}u + d);
    dst += c * pu(4u + 2u * ${RB}u + d);
  }
  for (var r = 0u; r < 32u; r += 8u) {
    let c0 = w.x * 32u + l.y + r;
    let cp = w.y * 32u + l.x;
    if (c0 < n0 && cp < np) {
      tile[l.y + r][l.x] = X[src + cp + c0 * pu(2u)];
    }
  }
  workgroupBarrier();
  for (var r = 0u; r < 32u; r += 8u) {
    let c0 = w.x * 32u + l.x;
    let cp = w.y * 32u + l.y + r;
    if (c0 < n0 && cp < np) {
      Y[dst + c0 + cp * pu(3u)] = tile[l.x][l.y + r];
    }
  }
}
