// Saved training runs in IndexedDB: the CSV, the settings, the latest checkpoint and the loss history.
const DB = "onnxtrain";
const STORE = "runs";

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

export const saveRun = (run) => transaction("readwrite", (store) => store.put(run));
export const getRun = (id) => transaction("readonly", (store) => store.get(id));
export const deleteRun = (id) => transaction("readwrite", (store) => store.delete(id));
export const listRuns = async () => (await transaction("readonly", (store) => store.getAll()))
  .sort((a, b) => b.id - a.id);
