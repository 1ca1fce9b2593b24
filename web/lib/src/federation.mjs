// Federated learning: the page as one client of a Flower federation.
// The federation server (`python -m onnxtrain federate`, or `python3 build.py serve --federate`) serves the site
// and, under fed/, a bridge where each page stands for one Flower node: it long-polls for a round's task (the
// global parameters), trains on its own data, and posts the parameters back.  The only bodies a page sends are
// parameter vectors (raw float32, the session's getContiguousParameters order) or nothing; its metrics go in the
// X-Metrics header, numbers only.
import { Tensor, feedsOf, plainTensor } from "./tensor.mjs";
import { connect, start } from "./engine_client.mjs";
import { TrainingSession, abortReason, checkCallbacks } from "./session.mjs";

const FED_POLL_STATUS_MS = 3000; // fed/status for onStatus
const FED_RETRY_MS = [500, 1000, 2000, 4000]; // after a failed poll (the network, or the server's 5xx)
const FED_GIVE_UP_MS = 30000; // failed polls this long in a row: join() rejects
const ARTIFACT_KEYS = ["trainModel", "evalModel", "optimizerModel", "checkpointState"];
const EVAL_ROWS = 256; // rows per runEvalStep while measuring accuracy on the local data

function fedError(what, response, text) {
  const said = (text || "").trim().slice(0, 300);
  return new Error(`${what}: HTTP ${response.status}${said ? `: ${said}` : ""}`);
}

// A tensor's rows [start, end) as a tensor of the same type (a view, no copy).
function rowsOf(tensor, start, end) {
  const row = tensor.dims.slice(1).reduce((n, d) => n * d, 1);
  const data = tensor.data.subarray(start * row, end * row);
  return new Tensor(tensor.type, data, [end - start, ...tensor.dims.slice(1)]);
}

// The session's model on a dataset, in the eval model: mean loss (its first output) and, where the eval model has
// the logits output `output` (else a second output) and the dataset an int64 labels input, the accuracy.
async function evaluateOn(session, dataset) {
  const names = session.evalInputNames;
  if (!names.length) throw new Error("the federation's session has no eval model");
  const inputs = Object.fromEntries(names.map((name) => {
    if (!(name in dataset)) throw new TypeError(`the dataset has no input '${name}' (the eval model takes ${names})`);
    const t = plainTensor(name, dataset[name], "dataset input");
    return [name, new Tensor(t.type, t.data, t.dims)];
  }));
  const rows = inputs[names[0]].dims[0];
  const labelsName = names.find((n) => inputs[n].type === "int64" && inputs[n].dims.length === 1);
  const outputs = session.evalOutputNames;
  const logitsName = outputs.includes("output") ? "output" : outputs[1];
  let lossSum = 0, right = 0;
  for (let start = 0; start < rows; start += EVAL_ROWS) {
    const end = Math.min(rows, start + EVAL_ROWS);
    const feeds = Object.fromEntries(names.map((n) => [n, rowsOf(inputs[n], start, end)]));
    const out = await session.runEvalStep(feeds);
    lossSum += Number(out[outputs[0]].data[0]) * (end - start);
    const logits = logitsName && labelsName ? out[logitsName] : null;
    if (!logits || logits.dims.length !== 2 || logits.dims[0] !== end - start) continue;
    const classes = logits.dims[1], labels = inputs[labelsName].data;
    for (let r = 0; r < end - start; r++) {
      let best = 0;
      for (let c = 1; c < classes; c++) if (logits.data[r * classes + c] > logits.data[r * classes + best]) best = c;
      if (BigInt(best) === labels[start + r]) right++;
    }
  }
  const accuracy = logitsName && labelsName && rows ? right / rows : null;
  return { loss: rows ? lossSum / rows : null, accuracy };
}

// A task's X-Config: {epochs, batchSize, learningRate, proximalMu}, the federation's settings where it says none.
function roundConfig(header, info) {
  let config = {};
  try { config = header ? JSON.parse(header) : {}; } catch { config = {}; }
  const number = (value, fallback) => (typeof value === "number" && Number.isFinite(value) ? value : fallback);
  return { epochs: number(config.epochs, info.localEpochs), batchSize: number(config.batchSize, info.batchSize),
    learningRate: number(config.learningRate, info.learningRate), proximalMu: number(config.proximalMu, 0) };
}

// Metrics as the X-Metrics header takes them: finite numbers only.
function metricsHeader(metrics) {
  return JSON.stringify(Object.fromEntries(Object.entries(metrics)
    .filter(([, v]) => typeof v === "number" && Number.isFinite(v))));
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
});

export class Federation {
  constructor(base, info) {
    this._base = base; // absolute URL of the federation's API, ending in "/"
    this.info = info;
    this.globalModelUrl = new URL("global.onnx", base).href;
    this._joined = null; // {client, stop (AbortController), done (join's promise)}
  }

  // The federation served at baseUrl (relative to the page; "fed/" by default): its info, or an Error saying that
  // no federation runs there.
  static async connect(baseUrl = "fed/") {
    const where = globalThis.document?.baseURI ?? globalThis.location?.href;
    const base = new URL(String(baseUrl).endsWith("/") ? String(baseUrl) : `${baseUrl}/`, where);
    let response;
    try {
      response = await fetch(new URL("info", base), { cache: "no-store" });
    } catch (err) {
      throw new Error(`no federation server answers at ${base.href} (${err.message})`);
    }
    if (response.status === 404) {
      throw new Error(`no federation is running at ${base.href}: start one with \`python -m onnxtrain federate\``);
    }
    if (!response.ok) throw fedError(`the federation at ${base.href}`, response, await response.text());
    let info;
    try { info = await response.json(); } catch {
      throw new Error(`the federation at ${base.href} sent info that is not JSON`);
    }
    const artifacts = info?.artifacts ?? {};
    if (!Number.isInteger(info?.parameters) || info.parameters < 1
        || !ARTIFACT_KEYS.every((k) => typeof artifacts[k] === "string")) {
      throw new Error(`the federation at ${base.href} sent info without its parameter count or its four artifacts`);
    }
    return new Federation(base.href, info);
  }

  // info's paths (fed/...) are relative to the site's root: the folder above the API's.
  _artifactUrl(path) { return new URL(path, new URL("../", this._base)).href; }

  // A TrainingSession of the federation's artifacts.
  async session() {
    const a = this.info.artifacts;
    return TrainingSession.create({ checkpointState: this._artifactUrl(a.checkpointState),
      trainModel: this._artifactUrl(a.trainModel), evalModel: this._artifactUrl(a.evalModel),
      optimizerModel: this._artifactUrl(a.optimizerModel) });
  }

  get joined() { return this._joined !== null; }

  // Take part until the run ends (resolves to {reason: "done", rounds, status}), fed.leave() (reason "left") or
  // `signal` aborts (rejects with signal.reason, after leaving).  Each task: the global parameters into `session`,
  // their loss and accuracy on `dataset` (input name -> Tensor), session.train() on it with the round's settings,
  // the loss and accuracy again, the parameters back.  onRound({round, phase: "training" | "sent" | "rejected" |
  // "failed", local: {loss, accuracy, globalAccuracy, examples} | null, error}) as a round goes; onStatus(fed/status)
  // every few seconds.  A round whose local step fails sends nothing (the round's timeout covers it) and the page
  // goes on polling.  Polls that fail (network, server errors) are retried with a back-off; after 30 s of them
  // join() rejects.
  async join({ session, dataset, onRound, onStatus, signal } = {}) {
    if (this._joined) throw new Error("this page has already joined the federation: leave() first");
    if (!(session instanceof TrainingSession)) throw new TypeError("join needs the session (fed.session())");
    checkCallbacks("join", { onRound, onStatus }, signal);
    const run = { client: null, stop: new AbortController(), rounds: 0, done: null };
    this._joined = run;
    try {
      const size = await session.getParametersSize(true);
      if (size !== this.info.parameters) {
        const theirs = this.info.parameters;
        throw new Error(`the session's model has ${size} trainable parameters, the federation's ${theirs}`);
      }
      const feeds = feedsOf(dataset, "dataset input");
      const missing = session.trainingInputNames.filter((n) => !(n in feeds));
      if (missing.length) throw new TypeError(`the dataset has no input '${missing[0]}'`);
      run.feeds = feeds;
      run.examples = feeds[session.trainingInputNames[0]].dims[0];
      if (!(run.examples > 0)) throw new Error("the dataset has no rows");
      const response = await fetch(new URL("join", this._base), { method: "POST" });
      const text = await response.text();
      if (!response.ok) throw fedError("the federation did not let this page join", response, text);
      run.client = JSON.parse(text).client;
    } catch (err) {
      this._joined = null;
      throw err;
    }
    run.done = this._takePart(run, session, onRound, onStatus, signal);
    return run.done;
  }

  async _takePart(run, session, onRound, onStatus, signal) {
    const onAbort = () => run.stop.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) run.stop.abort();
    // a closed tab says so at once (the server would notice its silence after ~10 s anyway)
    const onHide = () => globalThis.navigator?.sendBeacon?.(this._url("leave", run.client));
    globalThis.addEventListener?.("pagehide", onHide);
    const statusLoop = this._pollStatus(onStatus, run.stop.signal);
    try {
      const ended = await this._rounds(run, session, onRound);
      if (ended) return { ...ended, status: await this.status().catch(() => null) };
      await fetch(this._url("leave", run.client), { method: "POST" }).catch(() => {});
      if (signal?.aborted) throw abortReason(signal);
      return { reason: "left", rounds: run.rounds, status: await this.status().catch(() => null) };
    } finally {
      run.stop.abort();
      await Promise.all([statusLoop, run.polling]);
      signal?.removeEventListener("abort", onAbort);
      globalThis.removeEventListener?.("pagehide", onHide);
      this._joined = null;
    }
  }

  // Leave the federation (join() then resolves with reason "left"); nothing when not joined.
  async leave() {
    const run = this._joined;
    if (!run) return;
    run.stop.abort();
    await run.done?.catch(() => {});
  }

  // fed/status: {phase, round, rounds, clients, nodes, history, error}.
  async status() {
    const response = await fetch(new URL("status", this._base), { cache: "no-store" });
    if (!response.ok) throw fedError("the federation's status", response, await response.text());
    return response.json();
  }

  _url(path, client, task) {
    const url = new URL(path, this._base);
    url.searchParams.set("client", client);
    if (task !== undefined) url.searchParams.set("task", task);
    return url.href;
  }

  async _pollStatus(onStatus, stopped) {
    if (!onStatus) return;
    while (!stopped.aborted) {
      try {
        const status = await this.status();
        if (!stopped.aborted) onStatus(status);
      } catch { /* the round loop reports a lost server */ }
      await sleep(FED_POLL_STATUS_MS, stopped);
    }
  }

  // The rounds: null when stopped (leave or abort), {reason: "done", rounds} when the run ended.  Tasks come from
  // _poll, which goes on polling while a round trains, so the page is never silent while it is there.
  async _rounds(run, session, onRound) {
    const queue = [];
    let wake = () => {};
    const put = (item) => { queue.push(item); wake(); };
    run.stop.signal.addEventListener("abort", () => wake(), { once: true });
    run.polling = this._poll(run, put);
    for (;;) {
      while (!queue.length && !run.stop.signal.aborted) await new Promise((resolve) => { wake = resolve; });
      if (run.stop.signal.aborted) return null;
      const item = queue.shift();
      if (item.gone) return this._ended(run);
      if (item.error) throw item.error;
      const ended = await this._round(run, item, session, onRound);
      if (ended) return ended;
    }
  }

  // Long polls of fed/next, one after another until the page stops: each task ({round, task, config, body}), the
  // run's end ({gone: true}) or a failure ({error}) goes to put().  Failed polls (the network, a server error) are
  // retried with a back-off, for up to FED_GIVE_UP_MS.
  async _poll(run, put) {
    let failingSince = null, retries = 0;
    while (!run.stop.signal.aborted) {
      let response, body = null;
      try {
        response = await fetch(this._url("next", run.client), { cache: "no-store", signal: run.stop.signal });
        if (response.status >= 500) throw fedError("the federation's next task", response, await response.text());
        if (response.status === 200) body = new Uint8Array(await response.arrayBuffer());
      } catch (err) {
        if (run.stop.signal.aborted) return;
        failingSince ??= performance.now();
        if (performance.now() - failingSince > FED_GIVE_UP_MS) {
          const seconds = FED_GIVE_UP_MS / 1000;
          const lost = `lost the federation server at ${this._base} for over ${seconds} s: ${err.message}`;
          put({ error: new Error(lost) });
          return;
        }
        await sleep(FED_RETRY_MS[Math.min(retries++, FED_RETRY_MS.length - 1)], run.stop.signal);
        continue;
      }
      failingSince = null;
      retries = 0;
      if (response.status === 204) continue;
      if (response.status === 410) {
        put({ gone: true });
        return;
      }
      if (response.status !== 200) {
        put({ error: fedError("the federation's next task", response, await response.text()) });
        return;
      }
      put({ round: Number(response.headers.get("X-Round")), task: response.headers.get("X-Task"),
        config: roundConfig(response.headers.get("X-Config"), this.info), body });
    }
  }

  // 410: the run ended, or the server forgot this page (silent too long?).
  async _ended(run) {
    const status = await this.status().catch(() => null);
    if (status?.phase === "done") return { reason: "done", rounds: run.rounds };
    if (status?.phase === "failed") throw new Error(`the federation failed: ${status.error || "no reason given"}`);
    throw new Error("the federation server no longer knows this page (it was silent too long, or the run was " +
      "restarted): join again");
  }

  async _round(run, { round, task, config, body }, session, onRound) {
    const { feeds, examples } = run;
    const report = (phase, local = null, error = null) => onRound?.({ round, phase, local, error });
    let local, parameters;
    try {
      if (body.length !== 4 * this.info.parameters) {
        throw new Error(`the global parameters have ${body.length} bytes, not ${4 * this.info.parameters}`);
      }
      report("training");
      await session.loadParametersBuffer(body);
      const before = await evaluateOn(session, feeds);
      await session.train(feeds, { epochs: config.epochs, batchSize: config.batchSize,
        learningRate: config.learningRate, ...(config.proximalMu ? { proximalMu: config.proximalMu } : {}),
        validation: 0, keepBest: false, seed: round, signal: run.stop.signal });
      const after = await evaluateOn(session, feeds);
      local = { loss: after.loss, accuracy: after.accuracy, globalAccuracy: before.accuracy, examples };
      const tensor = await session.getContiguousParameters(true);
      parameters = new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
      if (parameters.length !== 4 * this.info.parameters) throw new Error("the trained parameters changed size");
    } catch (err) {
      if (run.stop.signal.aborted) return null;
      report("failed", null, String(err?.message ?? err));
      return null;
    }
    const metrics = metricsHeader({ "num-examples": examples, loss: local.loss, accuracy: local.accuracy,
      "global-accuracy": local.globalAccuracy });
    let answer;
    try {
      answer = await fetch(this._url("result", run.client, task), { method: "POST", body: parameters,
        headers: { "Content-Type": "application/octet-stream", "X-Metrics": metrics }, signal: run.stop.signal });
    } catch (err) {
      if (run.stop.signal.aborted) return null;
      report("failed", local, `the result did not reach the server: ${err.message}`);
      return null;
    }
    if (answer.status === 410) return this._ended(run);
    if (!answer.ok) {
      report("rejected", local, (await answer.text()).trim() || `HTTP ${answer.status}`);
      return null;
    }
    run.rounds++;
    report("sent", local);
    return null;
  }
}
