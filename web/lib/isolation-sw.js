// onnxtrain's cross-origin isolation service worker, for a host that cannot send headers (GitHub Pages and the
// like): it adds Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp to every
// response of the site's own origin, so a page it controls is crossOriginIsolated and the engine can use threads.
// Copy this file to the site's root and call onnxtrain's isolate("isolation-sw.js") first thing in the page: on the
// first visit the page is not controlled yet, and isolate() reloads it once.  A page opened with ?isolation=off is
// served without the headers (for an embedder that they break).  Same-origin responses need no
// Cross-Origin-Resource-Policy; those from other origins are not touched: under require-corp each must send
// Cross-Origin-Resource-Policy or CORS headers, or the browser blocks it.
//
// A service worker of the site's own (a cache) adds the headers with this file's isolated(request, response):
// it sets self.onnxtrainIsolationImported = true, then importScripts() this file, which then adds no listeners.

function isolated(request, response) {
  if (response.type === "opaque" || response.type === "opaqueredirect" || response.status === 0) return response;
  if (request.mode === "navigate" && new URL(request.url).searchParams.get("isolation") === "off") return response;
  const headers = new Headers(response.headers);
  headers.set("Cross-Origin-Opener-Policy", "same-origin");
  headers.set("Cross-Origin-Embedder-Policy", "require-corp");
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

if (!self.onnxtrainIsolationImported) {
  self.addEventListener("install", () => self.skipWaiting());
  self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
  self.addEventListener("fetch", (event) => {
    const request = event.request;
    if (new URL(request.url).origin !== self.location.origin) return;
    event.respondWith(fetch(request).then((response) => isolated(request, response)));
  });
}
