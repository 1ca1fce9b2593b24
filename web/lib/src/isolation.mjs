// Cross-origin isolation (for the engine's threads) on a host that cannot send COOP/COEP: registers the service
// worker at `serviceWorker` (a URL, e.g. a copy of the library's isolation-sw.js at the site's root), which adds
// them, and once it is active reloads the page, which it then controls.  Resolves to crossOriginIsolated when the
// page goes on (it never resolves when it reloads).  It goes on as it is when the page is isolated, is opened
// with ?isolation=off, is in a frame (which a top-level page's policy governs), has no service workers, is
// controlled already (by a worker without the headers: the next version's, the next visit), or has reloaded once
// this tab's session and is still not controlled; and, with a warning on the console, when the worker fails to
// register or install.

const RELOADED = "onnxtrain-isolation-reload"; // sessionStorage: the page reloaded for isolation

export async function isolate(serviceWorker, options = {}) {
  if (typeof serviceWorker !== "string" && !(serviceWorker instanceof URL)) {
    throw new TypeError("isolate needs the URL of the isolation service worker (a copy of isolation-sw.js)");
  }
  const workers = globalThis.navigator?.serviceWorker;
  let session;
  try {
    session = globalThis.sessionStorage;
  } catch {
    session = null; // a sandboxed or storage-blocked page: no guard against reloading again, so no reload
  }
  if (globalThis.crossOriginIsolated) {
    session?.removeItem(RELOADED);
    return true;
  }
  if (!workers || !session || session.getItem(RELOADED) || workers.controller || globalThis.top !== globalThis
      || new URLSearchParams(globalThis.location.search).get("isolation") === "off") return false;
  let registration;
  try {
    registration = await workers.register(serviceWorker, options);
  } catch (err) {
    console.warn(`onnxtrain: the isolation service worker ${serviceWorker} did not register: ${err.message}`);
    return false;
  }
  if (!(await activated(registration))) {
    console.warn(`onnxtrain: the isolation service worker ${serviceWorker} failed to install`);
    return false;
  }
  session.setItem(RELOADED, "1");
  globalThis.location.reload();
  return new Promise(() => {});
}

// Whether the registration has an active worker, or its new one becomes active (false: it failed to install).
function activated(registration) {
  const worker = registration.installing || registration.waiting;
  if (registration.active || !worker) return Promise.resolve(!!registration.active);
  return new Promise((resolve) => worker.addEventListener("statechange", () => {
    if (worker.state === "activating" || worker.state === "activated") resolve(true);
    else if (worker.state === "redundant") resolve(false);
  }));
}
