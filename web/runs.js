// Saved training runs in IndexedDB, one record per run: {id, revision, kind, name, epoch, settings, checkpoint,
// history, and what the flow of that kind needs to resume it}.  The page lists them in its "Saved runs" section.
// No save loses a run:
// - a save is one transaction, so it writes the whole record or nothing: a failed save (storage full) leaves the
//   previous save's record as it was, and the page says why and that the run itself is still there;
// - a save overwrites a record only while it holds the revision this tab last read or wrote.  If another tab wrote
//   the run in between (both resumed it), this tab's run goes on as a new record (" (copy)"), and both are kept;
// - where IndexedDB is unusable (some private windows), the page says that runs are not saved; training and
//   downloads work as before.
import { $, errorShower } from "./ui.js";

const DB = "onnxtrain";
const STORE = "runs";
const kinds = {}; // kind -> {section, describe(run), resume(run)}
let runtime = null; // resolves when the worker can take a run back
const showError = errorShower("runs-error");
const seen = new Map(); // run id -> the revision this tab last read or wrote
const moved = new Map(); // run id -> the id this tab saves that run under, since another tab wrote it
let saves = Promise.resolve(); // this tab's saves, one after another
const others = typeof BroadcastChannel === "function" ? new BroadcastChannel("onnxtrain-runs") : null;
if (others) others.onmessage = () => showRuns().catch(() => {}); // another tab saved or deleted a run

// IndexedDB cannot be opened here.
class Unavailable extends Error {}

const KEEP = "The run itself is still here: training goes on and its downloads work.";

function describe(err) {
  return err && err.name ? `${err.name}: ${err.message}` : String(err);
}

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: "id" });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

// `action(store, done)` makes the requests and calls done(result); the transaction's end settles the promise.
async function transaction(mode, action) {
  let db;
  try {
    db = await open();
  } catch (err) {
    throw new Unavailable(`Saving runs is unavailable in this window: the browser does not let the page use its storage ` +
      `(IndexedDB: ${describe(err)}). ${KEEP}`);
  }
  return new Promise((resolve, reject) => {
    let result;
    const tx = db.transaction(STORE, mode);
    action(tx.objectStore(STORE), (value) => { result = value; });
    tx.oncomplete = () => { db.close(); resolve(result); };
    tx.onabort = () => { db.close(); reject(tx.error || new Error("the transaction was aborted")); };
  });
}

function request(store, method, arg) {
  return (done) => {
    const r = store[method](arg);
    r.onsuccess = () => done(r.result);
  };
}

async function getRun(id) {
  const run = await transaction("readonly", (store, done) => request(store, "get", id)(done));
  if (!run) throw new Error("This run is no longer saved (deleted in another tab?).");
  seen.set(id, run.revision ?? 0);
  moved.delete(id); // resumed here: this tab's saves of it go to this record again
  return run;
}

const deleteRun = (id) => transaction("readwrite", (store) => store.delete(id));
const listRuns = async () => (await transaction("readonly", (store, done) => request(store, "getAll")(done)))
  .sort((a, b) => b.id - a.id);

// The first id from `id` up that no record has (in the same transaction, so no other tab takes it meanwhile).
function freeId(store, id, use) {
  request(store, "getKey", id)((key) => (key === undefined ? use(id) : freeId(store, id + 1, use)));
}

async function write(run) {
  const id = moved.get(run.id) ?? run.id;
  let written;
  try {
    written = await transaction("readwrite", (store, done) => request(store, "get", id)((current) => {
      if (!current || (current.revision ?? 0) === seen.get(id)) {
        const revision = (current?.revision ?? 0) + 1;
        store.put({ ...run, id, revision, name: current?.name ?? run.name });
        done({ id, revision });
        return;
      }
      freeId(store, Math.max(Date.now(), id + 1), (free) => {
        store.put({ ...run, id: free, revision: 1, name: `${run.name} (copy)` });
        done({ id: free, revision: 1 });
      });
    }));
  } catch (err) {
    if (err instanceof Unavailable) throw err;
    if (err.name === "QuotaExceededError") {
      throw new Error(`This epoch is not saved: the browser's storage for this site is full (deleting saved runs ` +
        `makes room; the last saved epoch is kept). ${KEEP}`);
    }
    throw new Error(`This epoch is not saved (IndexedDB: ${describe(err)}; the last saved epoch is kept). ${KEEP}`);
  }
  if (written.id !== run.id) moved.set(run.id, written.id);
  seen.set(written.id, written.revision);
}

export function saveRun(run) {
  const saved = saves.then(() => write(run));
  saves = saved.catch(() => {});
  return saved.then(() => {
    others?.postMessage("saved");
    return showRuns();
  });
}

// A flow's runs: `describe` gives the line shown in the list, `resume` puts the run back in its section.
export function registerRunKind(kind, handlers) { kinds[kind] = handlers; }

// List the saved runs now; resuming one waits for `ready` (the worker's runtime).
export async function initRuns(ready) {
  runtime = ready;
  try {
    await showRuns();
  } catch (err) {
    $("runs").hidden = false;
    throw err;
  }
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
    remove.onclick = () => deleteRun(r.id).then(() => { others?.postMessage("deleted"); return showRuns(); })
      .catch(showError);
    li.append(text, resume, remove);
    return li;
  }));
}
