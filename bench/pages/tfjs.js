// TF.js 4.22 with the wasm backend (one thread: without cross-origin isolation it loads the SIMD, non-threaded
// build).  TF.js cannot read ONNX artifacts, so each bench model is defined here again with the same shapes
// (convolutions in TF.js's NHWC layout), cross-entropy on the logits and Adam.
tf.wasm.setWasmPaths(new URL("../bench-vendor/tfjs/", location.href).href);
const backendReady = tf.setBackend("wasm").then(() => tf.ready());

let seed = 1;
const param = (shape, fanIn) => tf.variable(tf.randomNormal(shape, 0, 1 / Math.sqrt(fanIn), "float32", seed++));
const bias = (n) => tf.variable(tf.fill([n], 0.01));
const dense = (x, w, b, activation = "linear") => tf.fused.matMul({ a: x, b: w, bias: b, activation });

// Convolutions, fused with bias and relu as tf.layers runs them.  While gradients are recorded TF.js runs a fused op
// with relu as its parts (tf.conv2d, add, relu), so training needs the gradients of Conv2D and
// DepthwiseConv2dNative; tfjs-backend-wasm 4.22 has no Conv2DBackpropFilter and no DepthwiseConv2dNativeBackprop*
// kernels, so the first conv model's first step fails and the gradients below are registered for the rest.
const conv = (x, w, b, stride, pad) => tf.fused.conv2d({ x, filter: w, strides: stride, pad, bias: b, activation: "relu" });
const depthwise = (x, w, b, pad) => tf.fused.depthwiseConv2d({ x, filter: w, strides: 1, pad, bias: b, activation: "relu" });

const single = (v) => (Array.isArray(v) ? v[0] : v);
const padded = (x, pad) => (pad ? tf.pad(x, [[0, 0], [pad, pad], [pad, pad], [0, 0]]) : x);

// Gradients for Conv2D and DepthwiseConv2dNative (NHWC, square kernels, numeric padding, no dilation: what the
// bench models use) from kernels tfjs-backend-wasm has, as TensorFlow computes them: the input's through
// Conv2DBackpropInput (conv2dTranspose) or a depthwise convolution with the flipped filter; the filter's as a
// convolution of the (padded) input with the output gradient, the batch summed as channels, dilated by the stride.
let gradientCheck = null;
let nativeError = null;
async function registerConvGradients() {
  if (gradientCheck !== null) return gradientCheck;
  const reference = await convGradients("cpu");  // TF.js's own gradients, on the backend that has their kernels
  registerGradients();
  const ours = await convGradients("wasm");
  gradientCheck = Math.max(...ours.map((g, i) => Math.max(...g.map((v, j) => Math.abs(v - reference[i][j])))
    / Math.max(...reference[i].map(Math.abs))));
  return gradientCheck;
}

// The gradients of a small conv (stride 2) -> depthwise conv -> pointwise conv -> weighted sum, with respect to
// the input and the filters.
async function convGradients(backend) {
  await tf.setBackend(backend);
  const data = (shape, seed) => tf.randomUniform(shape, -1, 1, "float32", seed);
  const grads = tf.tidy(() => {
    const weights = data([2, 5, 5, 6], 5);
    const f = (x, w, dw, pw) => tf.sum(tf.mul(tf.conv2d(tf.depthwiseConv2d(tf.conv2d(x, w, 2, 1), dw, 1, 1), pw, 1, 0), weights));
    return tf.grads(f)([data([2, 10, 10, 3], 1), data([3, 3, 3, 4], 2), data([3, 3, 4, 1], 3), data([1, 1, 4, 6], 4)]);
  });
  const values = await Promise.all(grads.map((g) => g.data()));
  grads.forEach((g) => g.dispose());
  await tf.setBackend("wasm");
  return values.map((v) => Array.from(v));
}

function registerGradients() {
  tf.registerGradient({
    kernelName: "Conv2D", inputsToSave: ["x", "filter"],
    gradFunc: (dy, [x, filter], { strides, pad }) => {
      const stride = single(strides);
      return {
        x: () => tf.conv2dTranspose(dy, filter, x.shape, stride, pad),
        filter: () => {
          const [k, , cin, cout] = filter.shape;
          if (k === 1 && stride === 1 && !pad) {
            return tf.matMul(x.reshape([-1, cin]), dy.reshape([-1, cout]), true, false).reshape(filter.shape);
          }
          const full = tf.conv2d(tf.transpose(padded(x, pad), [3, 1, 2, 0]), tf.transpose(dy, [1, 2, 0, 3]), 1, "valid",
            "NHWC", stride);  // [cin, >= k, >= k, cout]
          return tf.transpose(tf.slice(full, [0, 0, 0, 0], [cin, k, k, cout]), [1, 2, 0, 3]);
        },
      };
    },
  });
  tf.registerGradient({
    kernelName: "DepthwiseConv2dNative", inputsToSave: ["x", "filter"],
    gradFunc: (dy, [x, filter], { strides, pad }) => {
      if (single(strides) !== 1) throw new Error("the bench's depthwise gradient takes stride 1 only");
      const [k, , c] = filter.shape;
      return {
        x: () => tf.depthwiseConv2d(dy, tf.reverse(filter, [0, 1]), 1, k - 1 - pad),
        filter: () => {
          const [n, ho, wo] = dy.shape;
          const xp = padded(x, pad);
          const image = tf.transpose(xp, [1, 2, 0, 3]).reshape([1, xp.shape[1], xp.shape[2], n * c]);
          const kernel = tf.transpose(dy, [1, 2, 0, 3]).reshape([ho, wo, n * c, 1]);
          const full = tf.depthwiseConv2d(image, kernel, 1, "valid");  // [1, >= k, >= k, n * c]
          return tf.sum(tf.slice(full, [0, 0, 0, 0], [1, k, k, n * c]).reshape([k, k, n, c]), 2).reshape([k, k, c, 1]);
        },
      };
    },
  });
}

function layerNorm(x, g, b) {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5))), g), b);
}

function encoderBlock(x, p, heads) {
  const [n, s, d] = x.shape;
  const hd = d / heads;
  const ln1 = layerNorm(x, p.ln1g, p.ln1b).reshape([n * s, d]);
  const split = (w, b) => dense(ln1, w, b).reshape([n, s, heads, hd]).transpose([0, 2, 1, 3]);
  const q = tf.mul(split(p.wq, p.bq), 1 / Math.sqrt(hd));
  const attention = tf.softmax(tf.matMul(q, split(p.wk, p.bk), false, true));
  const context = tf.matMul(attention, split(p.wv, p.bv)).transpose([0, 2, 1, 3]).reshape([n * s, d]);
  const x1 = tf.add(x, dense(context, p.wo, p.bo).reshape([n, s, d]));
  const ln2 = layerNorm(x1, p.ln2g, p.ln2b).reshape([n * s, d]);
  return tf.add(x1, dense(dense(ln2, p.w1, p.b1, "relu"), p.w2, p.b2).reshape([n, s, d]));
}

// Each model: {vars, logits(x)}, with x in TF.js layout (NHWC for the conv models: `input` transposes the data).
const MODELS = {
  mlp() {
    const v = { w1: param([784, 128], 784), b1: bias(128), w2: param([128, 10], 128), b2: bias(10) };
    return { vars: Object.values(v), logits: (x) => dense(dense(x, v.w1, v.b1, "relu"), v.w2, v.b2) };
  },
  cnn() {
    const v = { w: param([3, 3, 1, 8], 9), b: bias(8), fw: param([8 * 14 * 14, 10], 8 * 14 * 14), fb: bias(10) };
    return { vars: Object.values(v), nchw: true, logits: (x) => {
      const h = tf.maxPool(conv(x, v.w, v.b, 1, 1), 2, 2, "valid");
      return dense(h.reshape([h.shape[0], -1]), v.fw, v.fb);
    } };
  },
  convblock() {
    const v = { w1: param([3, 3, 3, 16], 27), b1: bias(16), dw: param([3, 3, 16, 1], 9), db: bias(16),
      pw: param([1, 1, 16, 32], 16), pb: bias(32), fw: param([32, 10], 32), fb: bias(10) };
    return { vars: Object.values(v), nchw: true, logits: (x) => {
      let h = conv(x, v.w1, v.b1, 2, 1);
      h = depthwise(h, v.dw, v.db, 1);
      h = conv(h, v.pw, v.pb, 1, 0);
      return dense(tf.mean(h, [1, 2]), v.fw, v.fb);
    } };
  },
  transformer() {
    const layers = [0, 1].map(() => ({ ln1g: tf.variable(tf.ones([128])), ln1b: tf.variable(tf.zeros([128])),
      ln2g: tf.variable(tf.ones([128])), ln2b: tf.variable(tf.zeros([128])),
      wq: param([128, 128], 128), bq: bias(128), wk: param([128, 128], 128), bk: bias(128),
      wv: param([128, 128], 128), bv: bias(128), wo: param([128, 128], 128), bo: bias(128),
      w1: param([128, 256], 128), b1: bias(256), w2: param([256, 128], 256), b2: bias(128) }));
    const head = { w: param([128, 10], 128), b: bias(10) };
    return { vars: [...layers.flatMap(Object.values), head.w, head.b], logits: (x) => {
      let h = x;
      for (const p of layers) h = encoderBlock(h, p, 4);
      return dense(tf.mean(h, 1), head.w, head.b);
    } };
  },
};
MODELS.transformer_ot = MODELS.transformer;

function input(model, data, batch, shape) {
  const x = tf.tensor(data, [batch, ...shape], "float32");
  if (!model.nchw) return x;
  const nhwc = tf.transpose(x, [0, 2, 3, 1]);
  x.dispose();
  return nhwc;
}

function release(model, ...tensors) {
  for (const t of [...model.vars, ...tensors]) t.dispose();
}

// Train with Adam (TF.js has no AdamW; the optimizer's cost is the same) on one batch.  Conv models try the
// native (fused) convolutions first and go on with "custom-grad" when their gradient kernels are missing.
window.bench.train = async (key, dir, options) => {
  await backendReady;
  const { meta, x: xData, y: yData } = await window.bench.loadModelData(dir);
  const model = MODELS[key]();
  const x = input(model, xData, meta.batch, meta.inputShape);
  const labels = tf.oneHot(tf.tensor1d(Int32Array.from(yData, Number), "int32"), meta.classes);
  const optimizer = tf.train.adam(1e-3);
  const losses = [];
  const step = async () => {
    const cost = optimizer.minimize(() => tf.losses.softmaxCrossEntropy(labels, model.logits(x)), true, model.vars);
    losses.push((await cost.data())[0]);
    cost.dispose();
  };
  try {
    await step();
  } catch (err) {
    if (!model.nchw || gradientCheck !== null) throw err;
    nativeError = String(err.message || err);
    await registerConvGradients();
    await step();
  }
  const impl = model.nchw && gradientCheck !== null ? "custom-grad" : "native";
  const tensorsBefore = tf.memory().numTensors;
  const result = await window.bench.timeSteps(step, options);
  const leaked = tf.memory().numTensors - tensorsBefore;
  optimizer.dispose();
  release(model, x, labels);
  return { ...result, impl, nativeError, gradientError: gradientCheck, leaked, firstLoss: losses[0], lastLoss: losses.at(-1),
    heapBytes: window.bench.heapBytes() };
};

// Forward-only (the fused ops run fused), batch meta.forwardBatch.
window.bench.forward = async (key, dir, options) => {
  await backendReady;
  const { meta, fx } = await window.bench.loadModelData(dir);
  const model = MODELS[key]();
  const x = input(model, fx, meta.forwardBatch, meta.inputShape);
  const step = async () => {
    const y = tf.tidy(() => model.logits(x));
    await y.data();
    y.dispose();
  };
  const result = await window.bench.timeSteps(step, options);
  release(model, x);
  return { ...result, heapBytes: window.bench.heapBytes() };
};
window.bench.ready = backendReady.then(() => ({ version: tf.version.tfjs, backend: tf.getBackend(),
  threads: tf.wasm.getThreadsCount ? tf.wasm.getThreadsCount() : "?", crossOriginIsolated: self.crossOriginIsolated }));
