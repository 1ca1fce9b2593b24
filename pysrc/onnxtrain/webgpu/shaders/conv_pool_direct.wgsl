// Convolution with one invocation per output element, for few output channels per group (depthwise): the same
// geometry and parameters as conv_pool_gemm.wgsl, with 21 the number of outputs.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Wt: array<f32>;
@group(0) @binding(3) var<storage, read> Bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const TRANSPOSED: bool = ${TRANSPOSED};

${GATHER}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = flat(gid, nw);
  if (i >= pu(21u)) { return; }
  let hw = pu(5u) * pu(6u);
  let pix = i % hw;
  let co = (i / hw) % pu(4u);
  let n = i / (hw * pu(4u));
  let oh = pix / pu(6u);
  let ow = pix % pu(6u);
  let g = co / pu(17u);
  let o = co % pu(17u);
  var acc = 0.0;
  for (var k = 0u; k < pu(18u); k++) {
    acc += gather(n, oh, ow, g, k) * weight(g, k, o);
  }
  Y[i] = acc + Bias[co];
}
