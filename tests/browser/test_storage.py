"""Storage faults while runs are saved to IndexedDB after every epoch: a full storage, a window without IndexedDB,
two tabs writing the same run.  Nothing is lost or torn, and the run in the page stays usable and downloadable."""
import onnx
import pytest

from browser.conftest import Page

# The saved runs as the page stored them (read straight from IndexedDB).
RUNS = """async () => {
  const db = await new Promise((ok, fail) => {
    const open = indexedDB.open("onnxtrain", 1);
    open.onsuccess = () => ok(open.result);
    open.onerror = () => fail(open.error);
  });
  const runs = await new Promise((ok) => {
    const request = db.transaction("runs").objectStore("runs").getAll();
    request.onsuccess = () => ok(request.result);
  });
  db.close();
  return runs.map((r) => ({ id: r.id, revision: r.revision, name: r.name, epoch: r.epoch, epochs: r.history.epoch,
    checkpoint: r.checkpoint.byteLength }));
}"""
QUOTA = 96 << 20
# Fills the site's storage: random bytes into a database of its own, in ever smaller records, until none fits.
FILL = """async () => {
  const db = await new Promise((ok, fail) => {
    const open = indexedDB.open("filler", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("junk", { autoIncrement: true });
    open.onsuccess = () => ok(open.result);
    open.onerror = () => fail(open.error);
  });
  const put = (size) => new Promise((ok, fail) => {
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i += 65536) crypto.getRandomValues(bytes.subarray(i, i + 65536));
    const tx = db.transaction("junk", "readwrite");
    tx.objectStore("junk").put(bytes);
    tx.oncomplete = () => ok(true);
    tx.onabort = () => (tx.error && tx.error.name === "QuotaExceededError" ? ok(false) : fail(tx.error));
  });
  let total = 0;
  for (let size = 4 << 20; size >= 256; size >>= 1) while (await put(size)) total += size;
  db.close();
  return total;
}"""
# Makes IndexedDB unusable, as some private windows do: indexedDB.open throws, or its request fails.
NO_INDEXEDDB = {
    "throws": """IDBFactory.prototype.open = function () {
        throw new DOMException("The operation is insecure.", "SecurityError");
    };""",
    "fails": """IDBFactory.prototype.open = function () {
        const request = { error: new DOMException("A mutation operation was attempted on a database that did not "
                                                  + "allow mutations.", "InvalidStateError") };
        setTimeout(() => request.onerror && request.onerror({ target: request }), 0);
        return request;
    };""",
}


def load_sample(page):
    page.click("#csv-sample")
    page.wait_for_selector("#csv-setup:not([hidden])")
    page.select_option("#csv-label", "cultivar")
    if page.locator("#csv-keep-best").count():
        page.uncheck("#csv-keep-best")  # every epoch to the end: the saved epochs are known in advance


def train(page, epochs):
    """Press Train (or Resume) and wait until the run stops."""
    page.fill("#csv-epochs", str(epochs))
    page.click("#csv-train")
    page.wait_for_function("() => !document.getElementById('csv-train').disabled "
                           "&& document.getElementById('csv-pause').disabled", timeout=180_000)


def resume(page, name):
    """Press Resume on the saved run called ``name`` in the page's list."""
    page.wait_for_selector("#runs:not([hidden])")
    page.locator("#runs-list li", has_text=f"{name}: predict").locator("button:text('Resume')").click()
    page.wait_for_function("() => document.getElementById('csv-metrics').textContent.startsWith('Restored')")
    return page.text_content("#csv-metrics")


def downloaded_model(page, tmp_path):
    with page.expect_download() as download:
        page.click("#csv-download")
    path = tmp_path / "model.onnx"
    download.value.save_as(path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    return model


def test_a_full_storage_keeps_the_last_saved_epoch_and_the_run_goes_on(browser, site_url, tmp_path):
    """The site gets a quota of QUOTA bytes (Chromium takes it for storage it has not opened yet), and a filler
    database takes what is left of it after two saved epochs."""
    context = browser.new_context()
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": site_url.rstrip("/"), "quotaSize": QUOTA})
    wrapped = Page(context, page, site_url)
    try:
        page.goto(site_url)
        page.evaluate("() => window.onnxtrain.ready")
        wrapped.call("snapshotSaved")  # the worker's own write is done (or failed: it may not fit)
        load_sample(page)
        train(page, 2)
        assert page.is_hidden("#csv-error"), page.text_content("#csv-error")
        [saved] = page.evaluate(RUNS)
        assert saved["epoch"] == 2 and saved["revision"] == 2
        assert page.evaluate(FILL) > 0

        resume(page, "wine.csv")
        train(page, 4)
        error = page.text_content("#csv-error")
        assert page.is_visible("#csv-error")
        assert "This epoch is not saved: the browser's storage for this site is full" in error, error
        assert "the last saved epoch is kept" in error and "its downloads work" in error, error
        assert "epoch 4/4" in page.text_content("#csv-metrics")
        assert page.evaluate(RUNS) == [saved]  # the failed saves changed nothing
        model = downloaded_model(page, tmp_path)
        assert [o.name for o in model.graph.output][:1] == ["output"]

        page.evaluate("() => new Promise((ok) => { indexedDB.deleteDatabase('filler').onsuccess = ok; })")
        page.reload()  # room again: the saved epoch resumes whole, and saves go on
        assert "at epoch 2" in resume(page, "wine.csv")
        train(page, 3)
        assert page.is_hidden("#csv-error"), page.text_content("#csv-error")
        [after] = page.evaluate(RUNS)
        assert (after["id"], after["epoch"], after["revision"], after["epochs"]) == (saved["id"], 3, 3, [1, 2, 3])
        assert wrapped.off_origin() == []
    finally:
        context.close()


@pytest.mark.parametrize("how", sorted(NO_INDEXEDDB))
def test_without_indexeddb_the_page_trains_downloads_and_says_runs_are_not_saved(browser, site_url, tmp_path, how):
    context = browser.new_context()
    context.add_init_script(NO_INDEXEDDB[how])
    # the engine's start module too: it falls back from the snapshot path to the plain start
    def break_worker(route):
        response = route.fetch()
        route.fulfill(response=response, body=NO_INDEXEDDB[how] + "\n" + response.text())
    context.route("**/onnxtrain/engine.mjs", break_worker)
    page = context.new_page()
    wrapped = Page(context, page, site_url)
    try:
        page.goto(site_url)
        info = page.evaluate("() => window.onnxtrain.ready")
        assert info["start"] == "plain"
        page.wait_for_selector("#runs:not([hidden])")
        unavailable = "Saving runs is unavailable in this window: the browser does not let the page use its storage"
        assert page.text_content("#runs-error").startswith(unavailable)
        load_sample(page)
        train(page, 2)
        assert "epoch 2/2" in page.text_content("#csv-metrics")
        assert page.text_content("#csv-error").startswith(unavailable)
        assert "training goes on and its downloads work" in page.text_content("#csv-error")
        downloaded_model(page, tmp_path)
        assert wrapped.off_origin() == []
    finally:
        context.unroute_all(behavior="ignoreErrors")  # an engine.mjs fetch still in the handler must not fail later
        context.close()


def test_two_tabs_training_the_same_saved_run_keep_both(own_page):
    """Both tabs resume one saved run and train it on at once: the first to save an epoch goes on in that record,
    the other's run becomes a new record (" (copy)"); each is whole, with every epoch of its own."""
    first = own_page.page
    load_sample(first)
    train(first, 1)
    [saved] = first.evaluate(RUNS)
    second = own_page.context.new_page()
    second.goto(own_page.url)
    second.evaluate("() => window.onnxtrain.ready")
    tabs = [first, second]
    for tab in tabs:
        assert "at epoch 1" in resume(tab, "wine.csv")
        tab.fill("#csv-epochs", "4")
    for tab in tabs:
        tab.click("#csv-train")
    for tab in tabs:
        tab.wait_for_function("() => !document.getElementById('csv-train').disabled "
                              "&& document.getElementById('csv-pause').disabled", timeout=180_000)
        assert tab.is_hidden("#csv-error"), tab.text_content("#csv-error")
        assert "epoch 4/4" in tab.text_content("#csv-metrics")
    runs = sorted(first.evaluate(RUNS), key=lambda r: r["id"])
    assert [(r["name"], r["epoch"], r["epochs"]) for r in runs] == [
        ("wine.csv", 4, [1, 2, 3, 4]), ("wine.csv (copy)", 4, [1, 2, 3, 4])]
    assert runs[0]["id"] == saved["id"] and runs[0]["revision"] == 4 and runs[1]["revision"] == 3
    for tab in tabs:  # both lists show both runs (a save in one tab refreshes the other's list)
        tab.wait_for_function("() => document.querySelectorAll('#runs-list li').length === 2")
    second.close()
    first.reload()
    assert "at epoch 4" in resume(first, "wine.csv (copy)")
