"""The worker's memory snapshot of Python: made on a first visit, put back on the next, made again when stale or
broken; the page starts either way and trains the same."""
import numpy as np

import ort_cases as oc
from browser.test_app_runtime import CASE, cpython_losses, train_in_page

# Changes the stored snapshots (the app's one): "key" as if the site had changed since, "heap" scrambles the saved
# memory.
SPOIL = """async (what) => {
  const db = await new Promise((ok, fail) => {
    const open = indexedDB.open("onnxtrain-python", 1);
    open.onsuccess = () => ok(open.result);
    open.onerror = fail;
  });
  const read = (request) => new Promise((ok) => { request.onsuccess = () => ok(request.result); });
  const names = await read(db.transaction("snapshot").objectStore("snapshot").getAllKeys());
  for (const name of names) {
    const record = await read(db.transaction("snapshot").objectStore("snapshot").get(name));
    if (what === "key") record.key = "an older site";
    if (what === "heap") {
      const heap = new Uint8Array(await record.heap.arrayBuffer());
      for (let i = heap.length >> 4; i < heap.length; i++) heap[i] = heap[i] * 7 + 13;
      record.heap = new Blob([heap]);
    }
    await new Promise((ok) => {
      const tx = db.transaction("snapshot", "readwrite");
      tx.objectStore("snapshot").put(record, name);
      tx.oncomplete = ok;
    });
  }
  db.close();
  return names;
}"""
DRAW = ("from onnxtrain.ops.random import unseeded; import numpy as np; "
        "[float(unseeded().random()), float(np.random.random())]")


def reload(page):
    page.page.reload()
    return page.page.evaluate("() => window.onnxtrain.ready")


def test_a_reload_starts_from_the_snapshot_and_trains_the_same(own_page):
    assert own_page.info["start"] == "made"
    assert own_page.call("snapshotSaved") is True
    draws = []
    for _ in range(2):
        info = reload(own_page)
        assert info["start"] == "restored" and info["numpy"] == "2.0.2" and info["kernels"], info
        draws.append(own_page.call("runPython", {"code": DRAW}))
    assert draws[0][0] != draws[1][0] and draws[0][1] != draws[1][1]  # generators reseeded, not replayed
    batches = oc.batches(CASE, 10)
    np.testing.assert_allclose(train_in_page(own_page.page, batches), cpython_losses(batches), rtol=1e-5)
    assert own_page.call("runPython", {"code": "import numpy as np; float(np.fft.fft(np.ones(4)).real[0])"}) == 4.0


def test_a_stale_or_broken_snapshot_is_made_again(own_page):
    assert own_page.call("snapshotSaved") is True
    for what in ("key", "heap"):
        assert own_page.page.evaluate(SPOIL, what) == ["python handwriting"]  # the app's start({tasks})
        assert reload(own_page)["start"] == "made"
        assert own_page.call("snapshotSaved") is True
    assert reload(own_page)["start"] == "restored"
    assert any("the Python snapshot was not used" in line for line in own_page.console)
