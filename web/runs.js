// Saved training runs in IndexedDB, one record per run: {id, kind, name, epoch, settings, checkpoint, history,
// and what the flow of that kind needs to resume it}.  The page lists them in its "Saved runs" section.
import { $, errorShower } from "./ui.js";

const DB = "onnxtrain";
const STORE = "runs";
const kinds = {}; // kind -> {section, describe(run), resume(run)}
let runtime = null; // resolves when the worker can take a run back
const showError = errorShower("runs-error");

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: "id" });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function transaction(mode, action) {
  const db = await open();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, mode);
    const request = action(tx.objectStore(STORE));
    tx.oncomplete = () => { db.close(); resolve(request && request.result); };
    tx.onerror = () => { db.close(); reject(tx.error); };
  });
}

const getRun = (id) => transaction("readonly", (store) => store.get(id));
const deleteRun = (id) => transaction("readwrite", (store) => store.delete(id));
const listRuns = async () => (await transaction("readonly", (store) => store.getAll())).sort((a, b) => b.id - a.id);

export async function saveRun(run) {
  await transaction("readwrite", (store) => store.put(run));
  await showRuns();
}

// A flow's runs: `describe` gives the line shown in the list, `resume` puts the run back in its section.
export function registerRunKind(kind, handlers) { kinds[kind] = handlers; }

// List the saved runs now; resuming one waits for `ready` (the worker's runtime).
export function initRuns(ready) {
  runtime = ready;
  return showRuns();
}

export async function showRuns() {
  const runs = (await listRuns()).filter((r) => kinds[r.kind || "csv"]);
  $("runs").hidden = runs.length === 0;
  $("runs-list").replaceChildren(...runs.map((r) => {
    const kind = kinds[r.kind || "csv"];
    const li = document.createElement("li");
    const text = document.createElement("span");
    text.textContent = `${kind.describe(r)} · saved ${new Date(r.saved || r.id).toLocaleString()}`;
    const resume = Object.assign(document.createElement("button"), { textContent: "Resume", className: "secondary" });
    resume.onclick = async () => {
      $("runs-error").hidden = true;
      try {
        await runtime;
        await kind.resume(await getRun(r.id));
        $(kind.section).scrollIntoView({ behavior: "smooth" });
      } catch (err) { showError(err); }
    };
    const remove = Object.assign(document.createElement("button"), { textContent: "Delete", className: "secondary" });
    remove.onclick = () => deleteRun(r.id).then(showRuns).catch(showError);
    li.append(text, resume, remove);
    return li;
  }));
}
