// Small helpers shared by the page's sections.
export const $ = (id) => document.getElementById(id);

// An element with properties (textContent, className, value, ...) and children (elements or strings, as text).
export function element(tag, props = {}, ...children) {
  const el = Object.assign(document.createElement(tag), props);
  el.append(...children.map((c) => (c instanceof Node ? c : String(c ?? ""))));
  return el;
}

// A table of text cells: `header` (or null) as the first row of <th>; with `rowHeads`, each row's first cell is a <th>.
export function tableOf(rows, header = null, { rowHeads = false } = {}) {
  const row = (cells, head) => element("tr", {}, ...cells.map((c, i) => element(head || (rowHeads && i === 0) ? "th" : "td", {}, c)));
  return element("table", {}, ...(header ? [row(header, true)] : []), ...rows.map((r) => row(r, false)));
}

// A task's confusion matrix (metrics.confusion, rows: true class) as a table in the element `target`.
export function showConfusion(metrics, classes, target) {
  if (!metrics.confusion) { $(target).replaceChildren(); return; }
  const rows = metrics.confusion.map((r, i) => [classes[i], ...r]);
  $(target).replaceChildren(element("p", { className: "metrics", textContent: "Confusion matrix (rows: true class, columns: predicted)" }),
    tableOf(rows, ["", ...classes], { rowHeads: true }));
}

// A bar per class in the element `target`: its name (`names`), its probability, the most likely one marked.
export function showProbabilities(target, probabilities, names) {
  const best = probabilities.indexOf(Math.max(...probabilities));
  $(target).replaceChildren(...probabilities.map((p, i) => {
    const fill = element("div", { className: "cam-bar-fill" });
    fill.style.width = `${(100 * p).toFixed(1)}%`;
    return element("div", { className: i === best ? "cam-bar best" : "cam-bar" },
      element("span", { className: "cam-bar-name" }, names[i] ?? `class ${i}`),
      element("div", { className: "cam-bar-track" }, fill),
      element("span", { className: "cam-bar-value" }, `${(100 * p).toFixed(0)}%`));
  }));
}

// Show the last line of an error (Python's message, without the traceback) in the element `id`.
export function errorShower(id) {
  return (err) => {
    $(id).hidden = false;
    $(id).textContent = String(err.message || err).trim().split("\n").filter(Boolean).slice(-1)[0];
  };
}

// Save bytes as a file, without the network (a Blob URL).
export function download(buffer, name) {
  const url = URL.createObjectURL(new Blob([buffer], { type: "application/octet-stream" }));
  const a = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// A button that saves what `produce()` returns (bytes) as `name` (a string or a function giving one).
export function downloadButton(id, name, produce, showError) {
  $(id).onclick = async () => {
    try { download(await produce(), typeof name === "function" ? name() : name); } catch (err) { showError(err); }
  };
}

// Under a flow's downloads: how to call the model it would download (the task's, a library Task).
export async function showSignature(task, id) {
  $(id).textContent = `The model: ${await task.signature()}`;
}

// The pretrained backbone the camera and image-folder flows start from, and the size of its input.
export const BACKBONE = "artifacts/efficientnet_lite0/backbone.onnx";
export const BACKBONE_SIZE = 224;
