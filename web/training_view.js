// The training controls every flow shares: epochs, batch, learning rate and schedule; train, pause, resume
// and cancel; a progress bar with examples/s and ETA; the live chart; and the run saved after every epoch.
// trainingControls() writes them into a flow's `${prefix}-training` element; TrainingView drives them.
// A section's controls are found by id: `${prefix}-train`, `-pause`, `-cancel`, `-progress`, `-metrics`,
// `-chart`, `-epochs`, `-batch`, `-lr`, `-schedule`, `-error`, its download buttons and, where the flow has
// validation data, `-keep-best` and `-patience` (keep the best epoch, stop after `patience` epochs without one).
import { TrainingChart } from "./chart.js";
import { saveRun } from "./runs.js";
import { $, element, errorShower } from "./ui.js";

const DOWNLOADS = { download: "Download model (.onnx)", checkpoint: "Checkpoint", artifacts: "Training artifacts (.zip)" };

// The controls of the flow `prefix`, in its element `${prefix}-training`: {epochs, batch, lr (their first values),
// schedule (a schedule choice), keepBest (the keep-the-best-epoch row; "hidden": hidden until the flow shows it),
// pause (a Pause button), chart, trainDisabled (Train disabled until the flow has data), note (a note beside the
// buttons), downloads (name -> its button's label, the model's first)}.
export function trainingControls(prefix, { epochs, batch, lr, schedule = true, keepBest = false, pause = true,
  chart = true, trainDisabled = false, note = false, downloads = {} } = {}) {
  const id = (name) => `${prefix}-${name}`;
  const number = (label, name, value, props) => element("label", {}, `${label} `,
    element("input", { id: id(name), type: "number", value: String(value), ...props }));
  const button = (name, label, props = {}) => element("button", { id: id(name), textContent: label, ...props });
  const row = (...children) => element("div", { className: "row" }, ...children);
  const settings = row(number("Epochs", "epochs", epochs, { min: "1", max: "1000" }),
    number("Batch", "batch", batch, { min: "1", max: "4096" }),
    number("Learning rate", "lr", lr, { step: "0.0001" }));
  if (schedule) {
    settings.append(element("label", {}, "Schedule ", element("select", { id: id("schedule") },
      element("option", { value: "constant" }, "constant"),
      element("option", { value: "linear" }, "linear warm-up and decay"))));
  }
  const parts = [settings];
  if (keepBest) {
    const best = row(element("label", { className: "check" },
      element("input", { id: id("keep-best"), type: "checkbox", checked: true }),
      " Keep the best epoch (stop when validation loss stops improving)"),
    number("Patience (epochs)", "patience", 10, { min: "0", title: "0: never stop early" }));
    Object.assign(best, { id: id("best-row"), hidden: keepBest === "hidden" });
    parts.push(best);
  }
  parts.push(row(button("train", "Train", { disabled: trainDisabled }),
    ...(pause ? [button("pause", "Pause", { disabled: true })] : []), button("cancel", "Cancel", { disabled: true }),
    ...(note ? [element("span", { id: id("train-note"), className: "note" })] : [])));
  parts.push(element("progress", { id: id("progress"), max: 1, value: 0 }),
    element("div", { id: id("metrics"), className: "metrics" }));
  if (chart) parts.push(element("div", { id: id("chart"), className: "chart" }));
  const labels = { ...DOWNLOADS, ...downloads };
  parts.push(row(...Object.keys(labels).map((name, i) =>
    button(name, labels[name], { disabled: true, ...(i ? { className: "secondary" } : {}) }))));
  $(id("training")).replaceChildren(...parts);
}

const FIELDS = ["epochs", "batch", "lr", "schedule", "patience"];
const ETA = / · about \d+ s left/;

// The line for a finished run that kept its best epoch (the library's train() summary).
function keptText(result, lastEpoch, patience) {
  const best = result.best;
  if (!best || !best.restored) return "";
  const loss = `validation loss ${best.bestLoss.toPrecision(4)}`;
  const kept = `kept epoch ${best.bestEpoch} (${loss})`;
  if (best.stop) {
    const epochs = best.epochsWithoutImprovement ?? patience;
    return `Stopped early at epoch ${lastEpoch}: no better validation loss for ${epochs} epochs; ${kept}. `;
  }
  return best.bestEpoch === lastEpoch ? `The last epoch was the best (${loss}). `
    : `Kept epoch ${best.bestEpoch}, the best (${loss}). `;
}

export class TrainingView {
  // controls: trainingControls()'s settings; downloads: the buttons enabled once there is a model;
  // flow: {train(options): the library's train() of the flow's task or session, metric(): the chart's metric name
  //        (or null), summary(metrics): validation text, metricValue(metrics): the chart's metric value,
  //        fresh(): set up a new run and return its record (kind, name, settings, data to resume)}
  constructor(prefix, flow, controls, downloads = ["download", "checkpoint", "artifacts"]) {
    trainingControls(prefix, controls);
    Object.assign(this, { prefix, flow, downloads, paused: false, run: null, saving: null, stopping: null });
    this.chart = new TrainingChart(this.el("chart"), flow.metric());
    this.showError = errorShower(`${prefix}-error`);
    this.el("pause").onclick = () => { this.paused = true; this.stopping?.abort(); };
    this.el("cancel").onclick = () => { this.paused = false; this.stopping?.abort(); };
    this.el("train").onclick = () => this.train();
  }

  el(name) { return $(`${this.prefix}-${name}`); }

  // Whether this section offers "keep the best epoch" now (the own-model flow only with validation data).
  keepsBest() {
    const box = this.el("keep-best");
    return Boolean(box && box.checked && !box.closest("[hidden]"));
  }

  settings() {
    const s = Object.fromEntries(FIELDS.filter((k) => this.el(k)).map((k) => [k, this.el(k).value]));
    if (this.el("keep-best")) s.keepBest = this.el("keep-best").checked;
    return s;
  }

  applySettings(settings) {
    for (const k of FIELDS) if (settings[k] !== undefined && this.el(k)) this.el(k).value = settings[k];
    if (settings.keepBest !== undefined && this.el("keep-best")) this.el("keep-best").checked = settings.keepBest;
  }

  // The metrics line, with the time estimate while training (never saved, dropped when training stops).
  showLine(line, eta = null) {
    this.line = line;
    this.el("metrics").textContent = eta === null ? line : `${line} · about ${Math.ceil(eta)} s left`;
  }

  // The next press of Train starts a new run.
  startOver() {
    this.paused = false;
    this.el("train").textContent = "Train";
    this.chart.reset(this.flow.metric());
    this.el("progress").value = 0;
  }

  // A saved run is back in the engine: the next press of Train continues it.
  restored(run) {
    this.run = run;
    this.paused = true;
    this.applySettings(run.settings);
    this.chart.reset(this.flow.metric(), run.history);
    this.el("progress").value = run.epoch / Number(run.settings.epochs);
    this.el("train").textContent = "Resume";
    this.showLine(`Restored ${run.name} at epoch ${run.epoch}. ${(run.metrics || "").replace(ETA, "")}`);
    for (const d of this.downloads) this.el(d).disabled = false;
  }

  // Keep the run in this browser, as it is now (a checkpoint that is not finite never reaches here: the engine
  // undoes such a step and fails it).
  save(fields) {
    Object.assign(this.run, { saved: Date.now(), history: { ...this.chart.history }, metrics: this.line,
      settings: { ...this.run.settings, ...this.settings() }, ...fields });
    this.saving = saveRun({ ...this.run }).catch(this.showError);
  }

  async train() {
    this.el("error").hidden = true;
    this.el("train").disabled = true;
    for (const d of this.downloads) this.el(d).disabled = true;
    this.el("pause").disabled = this.el("cancel").disabled = false;
    let ready = this.paused; // a failed step changes nothing, so after one the run can go on (e.g. with a smaller batch)
    try {
      if (!this.paused) {
        this.run = { id: Date.now(), epoch: 0, ...(await this.flow.fresh()) };
        this.chart.reset(this.flow.metric());
        ready = true;
      }
      this.paused = false;
      this.line = this.el("metrics").textContent.replace(ETA, "");
      const s = this.settings();
      const keepBest = this.keepsBest();
      const patience = Number(s.patience || 10);
      const started = performance.now();
      const startEpoch = this.run.epoch;
      let lossSum = 0, lossCount = 0, lastEpoch = startEpoch, examples = 0;
      this.stopping = new AbortController();
      let result = null;
      try {
        result = await this.flow.train({ epochs: Number(s.epochs), batchSize: Number(s.batch),
          learningRate: Number(s.lr), schedule: s.schedule, warmup: s.schedule === "linear" ? 0.05 : 0, keepBest,
          patience: keepBest ? patience : 0, checkpoints: true, signal: this.stopping.signal,
          onProgress: (p) => {
            lossSum += p.loss * p.examples; lossCount += p.examples; examples += p.examples;
            this.el("progress").value = p.progress / p.epochs;
            const seconds = (performance.now() - started) / 1000;
            const done = (p.progress - startEpoch) / (p.epochs - startEpoch);
            const eta = done > 0 ? seconds * (1 / done - 1) : 0;
            if (!p.epochDone) return;
            lastEpoch = p.epoch;
            const metrics = { loss: p.validationLoss, ...p.metrics };
            this.chart.add(p.epoch, lossSum / lossCount, metrics.loss ?? null, this.flow.metricValue(metrics));
            lossSum = lossCount = 0;
            if (keepBest && p.best) this.chart.markBest(p.best.bestEpoch);
            const summary = this.flow.summary(metrics);
            const best = keepBest && p.best && p.best.bestEpoch !== null && p.best.bestEpoch !== p.epoch
              ? ` · best so far: epoch ${p.best.bestEpoch}` : "";
            this.showLine(`epoch ${p.epoch}/${p.epochs}${summary ? " · " + summary : ""}${best} · ` +
              `${Math.round(examples / seconds)} ${this.flow.unit || "examples"}/s`, eta);
            this.flow.onEpoch?.(metrics);
            this.save({ checkpoint: p.checkpoint, epoch: p.epoch, best: keepBest ? p.best || this.run.best || null : null,
              bestCheckpoint: keepBest ? p.bestCheckpoint || this.run.bestCheckpoint || null : null });
          },
        });
      } catch (err) {
        if (err?.name !== "AbortError") throw err;
      } finally {
        this.stopping = null;
      }
      await this.saving; // "Done" (or "paused") means the last epoch is saved
      if (result === null) { // paused or cancelled: the run is where its last whole step left it
        for (const d of this.downloads) this.el(d).disabled = false;
        this.showLine([this.line, this.paused ? "paused" : "cancelled"].filter(Boolean).join(" · "));
        return;
      }
      const kept = keptText(result, lastEpoch, patience);
      if (result.best.restored) { // the best epoch's parameters are the run's now: saved as its state
        this.save({ checkpoint: result.checkpoint, kept: result.best.bestEpoch });
        await this.saving;
        if (result.best.bestEpoch !== lastEpoch) { // the line and tables describe the kept epoch's model
          const keptMetrics = result.metrics ?? { loss: result.best.bestLoss };
          const summary = this.flow.summary(keptMetrics);
          this.line = `epoch ${result.best.bestEpoch}${summary ? " · " + summary : ""}`;
          this.flow.onEpoch?.(keptMetrics);
        }
      }
      await this.flow.onStop?.();
      for (const d of this.downloads) this.el(d).disabled = false;
      this.showLine(`Done. ${kept}${this.line}`);
    } catch (err) {
      this.showError(err);
      this.paused = ready;
      if (this.line !== undefined) this.showLine(this.line); // no estimate while stopped
    } finally {
      this.el("train").disabled = false;
      this.el("train").textContent = this.paused ? "Resume" : "Train";
      this.el("pause").disabled = this.el("cancel").disabled = true;
    }
  }
}
