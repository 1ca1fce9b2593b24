// A live training chart (uPlot): training and validation loss per epoch, and one metric on a second axis.
import uPlot from "./vendor/uPlot.esm.js";

export class TrainingChart {
  constructor(element, metricName = null) {
    this.element = element;
    this.metricName = metricName;
    this.history = { epoch: [], train: [], validation: [], metric: [] };
    this.plot = null;
    window.addEventListener("resize", () => this.plot && this.plot.setSize(this.size()));
  }

  size() { return { width: Math.min(this.element.clientWidth || 600, 720), height: 240 }; }

  // Start over (a new run), or continue from a saved run's history.
  reset(metricName = this.metricName, history = null) {
    this.metricName = metricName;
    this.history = history ? { ...history } : { epoch: [], train: [], validation: [], metric: [] };
    if (this.plot) { this.plot.destroy(); this.plot = null; }
    if (history && history.epoch.length) this.draw();
  }

  add(epoch, train, validation, metric = null) {
    const h = this.history;
    h.epoch.push(epoch); h.train.push(train); h.validation.push(validation); h.metric.push(metric);
    this.draw();
  }

  draw() {
    const h = this.history;
    const name = this.metricName;
    const data = name ? [h.epoch, h.train, h.validation, h.metric] : [h.epoch, h.train, h.validation];
    if (this.plot) { this.plot.setData(data); return; }
    const series = [{ label: "epoch" }, { label: "training loss", stroke: "#2857d8" },
      { label: "validation loss", stroke: "#d8572a" }];
    const axes = [{ label: "epoch", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }, { label: "loss" }];
    if (name) {
      series.push({ label: name, stroke: "#2a9d5c", scale: "metric" });
      axes.push({ side: 1, scale: "metric", label: name, grid: { show: false } });
    }
    this.plot = new uPlot({
      ...this.size(), series, axes,
      scales: { x: { time: false }, metric: { range: (u, lo, hi) => [0, name === "accuracy" ? 1 : hi * 1.1] } },
    }, data, this.element);
  }
}
