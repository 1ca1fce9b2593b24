// The training controls every flow shares: epochs, batch, learning rate and schedule; train, pause, resume
// and cancel; a progress bar with examples/s and ETA; the live chart; and the run saved after every epoch.
// A section's controls are found by id: `${prefix}-train`, `-pause`, `-cancel`, `-progress`, `-metrics`,
// `-chart`, `-epochs`, `-batch`, `-lr`, `-schedule`, `-error`, its download buttons and, where the flow has
// validation data, `-keep-best` and `-patience` (keep the best epoch, stop after `patience` epochs without one).
import { TrainingChart } from "./chart.js";
import { saveRun } from "./runs.js";
import { $, errorShower } from "./ui.js";

const FIELDS = ["epochs", "batch", "lr", "schedule", "patience"];
const ETA = / · about \d+ s left/;

// The line for a finished run that kept its best epoch.
function keptText(result, lastEpoch, patience) {
  const best = result.best;
  if (!best || result.kept === null || result.kept === undefined) return "";
  const kept = `kept epoch ${result.kept} (validation loss ${best.best_loss.toPrecision(4)})`;
  if (result.stopped) {
    return `Stopped early at epoch ${lastEpoch}: no better validation loss for ${best.epochs_without_improvement ?? patience} epochs; ${kept}. `;
  }
  const loss = `validation loss ${best.best_loss.toPrecision(4)}`;
  return result.kept === lastEpoch ? `The last epoch was the best (${loss}). ` : `Kept epoch ${result.kept}, the best (${loss}). `;
}

export class TrainingView {
  // flow: {type: the worker's training message, metric(): the chart's metric name (or null),
  //        summary(metrics): validation text, metricValue(metrics): the chart's metric value,
  //        fresh(): set up a new run and return its record (kind, name, settings, data to resume)}
  constructor(prefix, call, flow, downloads = []) {
    Object.assign(this, { prefix, call, flow, downloads, paused: false, run: null, saving: null });
    this.chart = new TrainingChart(this.el("chart"), flow.metric());
    this.showError = errorShower(`${prefix}-error`);
    this.el("pause").onclick = () => { this.paused = true; call("cancel"); };
    this.el("cancel").onclick = () => { this.paused = false; call("cancel"); };
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

  // A saved run is back in the worker: the next press of Train continues it.
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

  // Keep the run in this browser, as it is now (a checkpoint that is not finite never reaches here: the worker
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
      let lossSum = 0, lossCount = 0, lastEpoch = startEpoch;
      const result = await this.call(this.flow.type, { epochs: Number(s.epochs), batchSize: Number(s.batch),
        lr: Number(s.lr), schedule: s.schedule, keepBest, patience }, {
        onProgress: (p) => {
          lossSum += p.loss; lossCount += 1;
          this.el("progress").value = p.progress / p.epochs;
          const done = (p.progress - startEpoch) / (p.epochs - startEpoch);
          const eta = done > 0 ? ((performance.now() - started) / 1000) * (1 / done - 1) : 0;
          if (!p.metrics) return;
          lastEpoch = p.epoch;
          this.chart.add(p.epoch, lossSum / lossCount, p.metrics.loss, this.flow.metricValue(p.metrics));
          lossSum = lossCount = 0;
          if (p.best) this.chart.markBest(p.best.best_epoch);
          const summary = this.flow.summary(p.metrics);
          const best = p.best && p.best.best_epoch !== null && p.best.best_epoch !== undefined && p.best.best_epoch !== p.epoch
            ? ` · best so far: epoch ${p.best.best_epoch}` : "";
          this.showLine(`epoch ${p.epoch}/${p.epochs}${summary ? " · " + summary : ""}${best} · ` +
            `${Math.round(p.examplesPerSecond)} ${this.flow.unit || "examples"}/s`, eta);
          this.flow.onEpoch?.(p.metrics);
          if (p.checkpoint) {
            this.save({ checkpoint: p.checkpoint, epoch: p.epoch, best: keepBest ? p.best || this.run.best || null : null,
              bestCheckpoint: keepBest ? p.bestCheckpoint || this.run.bestCheckpoint || null : null });
          }
        },
      });
      await this.saving; // "Done" (or "paused") means the last epoch is saved
      const kept = result.cancelled ? "" : keptText(result, lastEpoch, patience);
      if (result.checkpoint) { // the best epoch's parameters, now in the worker: saved as the run's state
        this.save({ checkpoint: result.checkpoint, kept: result.kept });
        await this.saving;
      }
      if (result.keptMetrics) { // the line and the flow's tables describe the kept epoch, the model the run holds now
        const summary = this.flow.summary(result.keptMetrics);
        this.line = `epoch ${result.kept}${summary ? " · " + summary : ""}`;
        this.flow.onEpoch?.(result.keptMetrics);
      }
      await this.flow.onStop?.();
      for (const d of this.downloads) this.el(d).disabled = false;
      this.showLine(result.cancelled ? [this.line, this.paused ? "paused" : "cancelled"].filter(Boolean).join(" · ")
        : `Done. ${kept}${this.line}`);
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
