// Service worker: keeps the site (Python runtime, wheels, page) in a versioned cache, so a repeat visit starts
// from the cache and works offline.  build.py writes precache.json, {version, files: {relative URL: sha256}}, and
// VERSION here, which changes with any file of the site: a deploy gives a new worker, which installs the new files
// and, once active, serves them.
const VERSION = "__PRECACHE_VERSION__";
const CACHE = `onnxtrain-${VERSION}`;
const HASH = "X-Onnxtrain-Sha256"; // each cached response carries its manifest hash, for the next version to reuse
const DOWNLOADS = 4; // at a time

const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");

// A file of this version from the network.  "no-cache" revalidates with the server, so a host's max-age cannot
// hand back an earlier deploy's copy from the HTTP cache, and a file the page has just loaded comes back as a 304
// instead of a second download.  A body that does not match the manifest (a stale cache on the way) is fetched
// once more bypassing every cache; then the install fails and the active version stays.
async function download(url, sha256) {
  for (const cache of ["no-cache", "reload"]) {
    const response = await fetch(url, { cache });
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const body = await response.arrayBuffer();
    if (hex(await crypto.subtle.digest("SHA-256", body)) !== sha256) continue;
    const headers = new Headers(response.headers);
    headers.set(HASH, sha256);
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  }
  throw new Error(`${url}: the server's copy does not match precache.json of version ${VERSION}`);
}

// The same file, unchanged, from an earlier version's cache (an update downloads only what changed).
async function reuse(earlier, url, sha256) {
  for (const cache of earlier) {
    const response = await cache.match(url);
    if (response && response.headers.get(HASH) === sha256) return response;
  }
  return null;
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const manifest = await (await fetch("precache.json", { cache: "no-store" })).json();
    if (manifest.version !== VERSION) throw new Error(`precache.json is of version ${manifest.version}, not ${VERSION}`);
    const earlier = await Promise.all((await caches.keys())
      .filter((key) => key.startsWith("onnxtrain-") && key !== CACHE).map((key) => caches.open(key)));
    const cache = await caches.open(CACHE);
    const files = Object.entries(manifest.files);
    let next = 0;
    await Promise.all(Array.from({ length: DOWNLOADS }, async () => {
      while (next < files.length) {
        const [url, sha256] = files[next++];
        await cache.put(url, (await reuse(earlier, url, sha256)) || (await download(url, sha256)));
      }
    }));
    await self.skipWaiting();
  })().catch(async (err) => {
    await caches.delete(CACHE);
    throw err;
  }));
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
    const cached = await (await caches.open(CACHE)).match(event.request, { ignoreSearch: true });
    return cached || fetch(event.request);
  })());
});
