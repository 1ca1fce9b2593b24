// A live training chart (uPlot): training and validation loss per epoch, one metric on a second axis, and a
// dashed line at the best epoch (by validation loss).  The legend shows the hovered epoch's values, else the last.
import uPlot from "./vendor/uPlot.esm.js";

const BEST = "#7a3cc2";

// An axis as wide as its longest tick label (uPlot's fixed default is too narrow for values like 0.0005).
function fitAxis(u, values, axisIndex, cycle) {
  const axis = u.axes[axisIndex];
  if (cycle > 1) return axis._size;
  const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
  u.ctx.font = axis.font[0];
  return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / devicePixelRatio + 4);
}

// The series' value in the legend: the hovered one, or without a hover the last one.
const shown = (format) => (u, value, series, index) => {
  const v = index === null || index === undefined ? u.data[series].at(-1) : value;
  return v === null || v === undefined || Number.isNaN(v) ? "–" : format(v);
};
const number = (v) => (Number.isInteger(v) ? String(v) : v.toPrecision(4));

export class TrainingChart {
  constructor(element, metricName = null) {
    this.element = element;
    this.metricName = metricName;
    this.history = { epoch: [], train: [], validation: [], metric: [], best: null };
    this.plot = null;
    window.addEventListener("resize", () => this.plot && this.plot.setSize(this.size()));
  }

  size() { return { width: Math.min(this.element.clientWidth || 600, 720), height: 240 }; }

  // Start over (a new run), or continue from a saved run's history.
  reset(metricName = this.metricName, history = null) {
    this.metricName = metricName;
    this.history = history ? { best: null, ...history } : { epoch: [], train: [], validation: [], metric: [], best: null };
    if (this.plot) { this.plot.destroy(); this.plot = null; }
    this.showBest();
    if (history && history.epoch.length) this.draw();
  }

  add(epoch, train, validation, metric = null) {
    const h = this.history;
    h.epoch.push(epoch); h.train.push(train); h.validation.push(validation); h.metric.push(metric);
    this.draw();
  }

  // Mark `epoch` as the best one (null: none).
  markBest(epoch) {
    this.history.best = epoch ?? null;
    this.showBest();
    if (this.plot) this.plot.redraw(false);
  }

  showBest() {
    if (this.history.best === null) delete this.element.dataset.bestEpoch;
    else this.element.dataset.bestEpoch = String(this.history.best);
  }

  drawBest(u) {
    const best = this.history.best;
    if (best === null || best === undefined) return;
    const x = u.valToPos(best, "x", true);
    const { top, height } = u.bbox;
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = ctx.fillStyle = BEST;
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.setLineDash([5 * devicePixelRatio, 4 * devicePixelRatio]);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
    ctx.textAlign = x > u.bbox.left + u.bbox.width * 0.8 ? "right" : "left";
    ctx.fillText(`best: epoch ${best}`, x + (ctx.textAlign === "left" ? 4 : -4) * devicePixelRatio, top + 12 * devicePixelRatio);
    ctx.restore();
  }

  draw() {
    const h = this.history;
    const name = this.metricName;
    const data = name ? [h.epoch, h.train, h.validation, h.metric] : [h.epoch, h.train, h.validation];
    if (this.plot) {
      this.plot.setData(data);
      this.plot.setLegend({ idx: null });
      return;
    }
    const percent = name === "accuracy";
    const series = [{ label: "epoch", value: shown(String) },
      { label: "training loss", stroke: "#2857d8", value: shown(number) },
      { label: "validation loss", stroke: "#d8572a", value: shown(number) }];
    const axes = [{ label: "epoch", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }, { label: "loss", size: fitAxis }];
    if (name) {
      series.push({ label: name, stroke: "#2a9d5c", scale: "metric",
        value: shown((v) => (percent ? `${(100 * v).toFixed(1)}%` : number(v))) });
      axes.push({ side: 1, scale: "metric", label: name, grid: { show: false }, size: fitAxis });
    }
    this.plot = new uPlot({
      ...this.size(), series, axes,
      scales: { x: { time: false }, metric: { range: (u, lo, hi) => [0, percent ? 1 : hi * 1.1] } },
      hooks: { draw: [(u) => this.drawBest(u)] },
    }, data, this.element);
    this.plot.setLegend({ idx: null });
  }
}
