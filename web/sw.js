// Service worker: keeps the site (Python runtime, wheels, page) in a versioned cache, so a repeat visit
// starts from the cache and works offline.  build.py writes the version and the file list.
const VERSION = "__PRECACHE_VERSION__";
const CACHE = `onnxtrain-${VERSION}`;

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const files = await (await fetch("precache.json", { cache: "no-store" })).json();
    const cache = await caches.open(CACHE);
    await cache.addAll(files);
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const key of await caches.keys()) {
      if (key.startsWith("onnxtrain-") && key !== CACHE) await caches.delete(key);
    }
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (event) => {
  if (event.request.method !== "GET" || new URL(event.request.url).origin !== self.location.origin) return;
  event.respondWith((async () => {
    const cached = await caches.match(event.request, { ignoreSearch: true });
    return cached || fetch(event.request);
  })());
});
