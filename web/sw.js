// Service worker: keeps the site (Python runtime, wheels, page) in a versioned cache, so a repeat visit starts
// from the cache and works offline.  build.py writes precache.json, {version, files: {relative URL: sha256},
// onDemand: {relative URL: sha256}}, and VERSION here, which changes with any file of the site: a deploy gives a new
// worker, which installs the new files and, once active, serves them.  The files `onDemand` lists (the pretrained
// backbone and language model, which only some flows load) are not downloaded at install: each is kept once a page has fetched it, and
// a new version takes it over from the one before when it is unchanged.  Every response it serves carries COOP and
// COEP (the library's isolation-sw.js, isolated()), so a page it controls is cross-origin isolated on any host.
self.onnxtrainIsolationImported = true;
importScripts("onnxtrain/isolation-sw.js");

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

const MANIFEST = "precache.json";
let onDemand = null; // resolves to this version's {absolute URL: sha256} of the files cached when first fetched

function onDemandFiles() {
  onDemand = onDemand || (async () => {
    const response = await (await caches.open(CACHE)).match(MANIFEST);
    const listed = response ? (await response.json()).onDemand || {} : {};
    return Object.fromEntries(Object.entries(listed).map(([url, sha]) => [new URL(url, self.registration.scope).href, sha]));
  })();
  return onDemand;
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const manifest = await (await fetch(MANIFEST, { cache: "no-store" })).json();
    if (manifest.version !== VERSION) throw new Error(`precache.json is of version ${manifest.version}, not ${VERSION}`);
    const earlier = await Promise.all((await caches.keys())
      .filter((key) => key.startsWith("onnxtrain-") && key !== CACHE).map((key) => caches.open(key)));
    const cache = await caches.open(CACHE);
    await cache.put(MANIFEST, new Response(JSON.stringify(manifest), { headers: { "Content-Type": "application/json" } }));
    for (const [url, sha256] of Object.entries(manifest.onDemand || {})) {
      const kept = await reuse(earlier, url, sha256);
      if (kept) await cache.put(url, kept);
    }
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

// An on-demand file from the network, kept in the cache when its bytes are the manifest's.
async function keep(cache, url, response, sha256) {
  const body = await response.arrayBuffer();
  if (hex(await crypto.subtle.digest("SHA-256", body)) !== sha256) return;
  const headers = new Headers(response.headers);
  headers.set(HASH, sha256);
  await cache.put(url, new Response(body, { status: response.status, statusText: response.statusText, headers }));
}

self.addEventListener("fetch", (event) => {
  if (event.request.method !== "GET" || new URL(event.request.url).origin !== self.location.origin) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const cached = await cache.match(event.request, { ignoreSearch: true });
    if (cached) return isolated(event.request, cached);
    const response = await fetch(event.request);
    const url = new URL(event.request.url);
    url.search = "";
    const sha256 = (await onDemandFiles())[url.href];
    if (sha256 && response.ok) event.waitUntil(keep(cache, url.href, response.clone(), sha256).catch(() => {}));
    return isolated(event.request, response);
  })());
});
