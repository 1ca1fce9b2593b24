// "Teach the digit recogniser your handwriting": a drawing pad, live predictions, new classes, fine-tuning.
import { $, download, errorShower } from "./ui.js";
let call = null;
let classes = [];
let drawing = false;
let predicting = false;

// The drawing as scikit-learn's digits: 8x8 grayscale, ink high, values 0..16.
export function pixels() {
  const small = new OffscreenCanvas(8, 8);
  const context = small.getContext("2d", { willReadFrequently: true });
  context.imageSmoothingQuality = "high";
  context.drawImage($("pad"), 0, 0, 8, 8);
  const data = context.getImageData(0, 0, 8, 8).data;
  return Array.from({ length: 64 }, (_, i) => (data[i * 4] / 255) * 16);
}

const showError = errorShower("digit-error");

function fillClasses(selected) {
  $("digit-class").innerHTML = classes.map((c, i) => `<option value="${i}">${c}</option>`).join("");
  if (selected !== undefined) $("digit-class").value = String(selected);
}

async function predict() {
  if (predicting) return;
  predicting = true;
  try {
    const p = await call("digitsPredict", { pixels: pixels() });
    const best = p.indexOf(Math.max(...p));
    $("digit-prediction").textContent = `Looks like: ${classes[best]} (${(100 * p[best]).toFixed(0)}%)`;
  } catch (err) { showError(err); } finally { predicting = false; }
}

function clearPad() {
  const context = $("pad").getContext("2d");
  context.fillStyle = "#000";
  context.fillRect(0, 0, 200, 200);
  $("digit-prediction").textContent = "Draw a digit";
}

function setUpPad() {
  const pad = $("pad");
  const context = pad.getContext("2d");
  clearPad();
  const at = (e) => { const r = pad.getBoundingClientRect(); return [(e.clientX - r.left) * 200 / r.width, (e.clientY - r.top) * 200 / r.height]; };
  pad.addEventListener("pointerdown", (e) => { drawing = true; context.beginPath(); context.moveTo(...at(e)); });
  pad.addEventListener("pointermove", (e) => {
    if (!drawing) return;
    Object.assign(context, { strokeStyle: "#fff", lineWidth: 22, lineCap: "round", lineJoin: "round" });
    context.lineTo(...at(e));
    context.stroke();
  });
  const stop = () => { if (drawing) { drawing = false; predict(); } };
  pad.addEventListener("pointerup", stop);
  pad.addEventListener("pointerleave", stop);
}

export function setUpDigits(rpc, ready) {
  call = rpc;
  setUpPad();
  ready.then(async () => {
    const [model, replay] = await Promise.all(["model.onnx", "replay.npz"].map(async (f) =>
      (await fetch(`artifacts/digits/${f}`)).arrayBuffer()));
    classes = await call("digitsLoad", { model, replay });
    fillClasses(0);
    for (const b of ["digit-add", "digit-new-add", "digit-train"]) $(b).disabled = false;
  }).catch(showError);
  $("digit-clear").onclick = clearPad;
  $("digit-add").onclick = async () => {
    try {
      const counts = await call("digitsAddExample", { pixels: pixels(), label: Number($("digit-class").value) });
      $("digit-counts").textContent = "Examples: " + Object.entries(counts).filter(([, n]) => n).map(([c, n]) => `${c}: ${n}`).join(", ");
      clearPad();
    } catch (err) { showError(err); }
  };
  $("digit-new-add").onclick = async () => {
    try {
      const index = await call("digitsAddClass", { name: $("digit-new").value });
      classes.push($("digit-new").value.trim());
      fillClasses(index);
      $("digit-new").value = "";
    } catch (err) { showError(err); }
  };
  $("digit-train").onclick = async () => {
    $("digit-error").hidden = true;
    $("digit-train").disabled = true;
    $("digit-status").textContent = "Fine-tuning…";
    try {
      const r = await call("digitsFineTune", { epochs: 20, lr: 0.01, headOnly: $("digit-mode").value === "head" });
      $("digit-status").textContent = `Fine-tuned on ${r.examples} examples: loss ${r.first_loss.toFixed(3)} → ${r.last_loss.toFixed(3)}. Draw to try it.`;
      $("digit-download").disabled = false;
    } catch (err) {
      showError(err);
      $("digit-status").textContent = "";
    } finally { $("digit-train").disabled = false; }
  };
  $("digit-download").onclick = async () => download(await call("digitsExport"), "digits.onnx");
  window.onnxtrainDigits = { pixels };
}
