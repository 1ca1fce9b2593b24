// The training controls every flow shares: epochs, batch, learning rate and schedule; train, pause, resume
// and cancel; a progress bar with examples/s and ETA; the live chart; and the run saved after every epoch.
// A section's controls are found by id: `${prefix}-train`, `-pause`, `-cancel`, `-progress`, `-metrics`,
// `-chart`, `-epochs`, `-batch`, `-lr`, `-schedule`, `-error`, and its download buttons.
import { TrainingChart } from "./chart.js";
import { saveRun } from "./runs.js";
import { $, errorShower } from "./ui.js";

const FIELDS = ["epochs", "batch", "lr", "schedule"];

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

  settings() { return Object.fromEntries(FIELDS.map((k) => [k, this.el(k).value])); }

  applySettings(settings) {
    for (const k of FIELDS) if (settings[k] !== undefined) this.el(k).value = settings[k];
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
    this.el("metrics").textContent = `Restored ${run.name} at epoch ${run.epoch}. ${run.metrics || ""}`;
    for (const d of this.downloads) this.el(d).disabled = false;
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
      const s = this.settings();
      const started = performance.now();
      const startEpoch = this.run.epoch;
      let lossSum = 0, lossCount = 0;
      const result = await this.call(this.flow.type, { epochs: Number(s.epochs), batchSize: Number(s.batch),
        lr: Number(s.lr), schedule: s.schedule }, {
        onProgress: (p) => {
          lossSum += p.loss; lossCount += 1;
          this.el("progress").value = p.progress / p.epochs;
          const done = (p.progress - startEpoch) / (p.epochs - startEpoch);
          const eta = done > 0 ? ((performance.now() - started) / 1000) * (1 / done - 1) : 0;
          if (!p.metrics) return;
          this.chart.add(p.epoch, lossSum / lossCount, p.metrics.loss, this.flow.metricValue(p.metrics));
          lossSum = lossCount = 0;
          const summary = this.flow.summary(p.metrics);
          this.el("metrics").textContent = `epoch ${p.epoch}/${p.epochs}${summary ? " · " + summary : ""} · ` +
            `${Math.round(p.examplesPerSecond)} ${this.flow.unit || "examples"}/s · about ${Math.ceil(eta)} s left`;
          this.flow.onEpoch?.(p.metrics);
          if (p.checkpoint) {
            Object.assign(this.run, { checkpoint: p.checkpoint, epoch: p.epoch, saved: Date.now(),
              history: { ...this.chart.history }, metrics: this.el("metrics").textContent,
              settings: { ...this.run.settings, ...this.settings() } });
            this.saving = saveRun({ ...this.run }).catch(this.showError);
          }
        },
      });
      await this.saving; // "Done" (or "paused") means the last epoch is saved
      await this.flow.onStop?.();
      for (const d of this.downloads) this.el(d).disabled = false;
      const text = this.el("metrics").textContent.replace(/ · about \d+ s left/, "");
      this.el("metrics").textContent = result.cancelled ? `${text} · ${this.paused ? "paused" : "cancelled"}` : `Done. ${text}`;
    } catch (err) {
      this.showError(err);
      this.paused = ready;
    } finally {
      this.el("train").disabled = false;
      this.el("train").textContent = this.paused ? "Resume" : "Train";
      this.el("pause").disabled = this.el("cancel").disabled = true;
    }
  }
}
