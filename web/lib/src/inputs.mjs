// What the library takes as a model, a data file or images, read as bytes: a URL, a Response, a Blob, bytes, or one
// of the page's images.

// What bytesOf takes, in words.
export const BYTE_SOURCES = "a URL, a Response, a Blob (or File), an ArrayBuffer or a Uint8Array";

export const isA = (value, name) => typeof globalThis[name] === "function" && value instanceof globalThis[name];

// `source` as a Response whose body is there to read: fetched when it is a URL (a string, relative to the page, or
// a URL), as it is when it is a Response; null when it is neither.  A response that is not ok rejects.
async function responseOf(source, what) {
  let response = source;
  if (typeof source === "string" || source instanceof URL) response = await fetch(source);
  else if (!isA(source, "Response")) return null;
  if (!response.ok) {
    const where = response.url || (typeof source === "string" ? source : "(a Response without a URL)");
    throw new Error(`${what} ${where}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`);
  }
  if (response.bodyUsed) throw new TypeError(`${what}: the Response's body has been read already`);
  return response;
}

// A model, checkpoint or data file given as BYTE_SOURCES says, as a Uint8Array; null for none.
export async function bytesOf(source, what) {
  if (source === undefined || source === null || source === "") return null;
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (isA(source, "Blob")) return new Uint8Array(await source.arrayBuffer());
  const response = await responseOf(source, what);
  if (response) return new Uint8Array(await response.arrayBuffer());
  throw new TypeError(`${what} must be ${BYTE_SOURCES}`);
}

// A file's name where `source` is a File, else `fallback`.
export const fileName = (source, fallback) => (isA(source, "File") && source.name ? source.name : fallback);

// A model's bytes from a URL (relative to the page) or a Response, read with progress: onLoad({loaded, total,
// seconds, stage: "download"}) per chunk (total is null when the server does not say), or from a Blob or bytes.
export async function bytesWithProgress(source, what, onLoad, started) {
  if (onLoad !== undefined && typeof onLoad !== "function") throw new TypeError("onLoad must be a function");
  const response = await responseOf(source, what);
  if (!response) {
    const bytes = await bytesOf(source, what);
    if (!bytes) throw new TypeError(`${what} must be ${BYTE_SOURCES}`);
    return bytes;
  }
  const length = Number(response.headers.get("content-length"));
  const total = Number.isFinite(length) && length > 0 ? length : null;
  const seconds = () => (performance.now() - started) / 1000;
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onLoad?.({ loaded: bytes.length, total: bytes.length, seconds: seconds(), stage: "download" });
    return bytes;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  onLoad?.({ loaded, total, seconds: seconds(), stage: "download" });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    onLoad?.({ loaded, total, seconds: seconds(), stage: "download" });
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

// The images the tasks take besides RGBA bytes, drawn at their natural size (IMAGE_SOURCES).
const IMAGE_TYPES = ["ImageData", "HTMLImageElement", "HTMLCanvasElement", "OffscreenCanvas", "HTMLVideoElement",
  "ImageBitmap", "VideoFrame"];
const IMAGE_SOURCES = "an <img>, a <canvas>, an OffscreenCanvas, a <video>, an ImageBitmap, a VideoFrame or an ImageData";

export const isImage = (value) => IMAGE_TYPES.some((name) => isA(value, name));

// An image's natural width and height; an image that has nothing to draw yet (not loaded, no video frame, closed)
// throws, saying so.
function naturalSize(image, what) {
  let width = image.width, height = image.height, missing = "";
  if (isA(image, "HTMLImageElement")) {
    [width, height] = [image.naturalWidth, image.naturalHeight];
    const src = image.currentSrc || image.src;
    if (!image.complete || !width) missing = `the <img>${src ? ` ${src}` : ""} is not loaded (yet)`;
  } else if (isA(image, "HTMLVideoElement")) {
    [width, height] = [image.videoWidth, image.videoHeight];
    if (image.readyState < 2 || !width) missing = "the <video> has no frame yet: wait for its loadeddata event";
  } else if (isA(image, "VideoFrame")) {
    [width, height] = [image.displayWidth, image.displayHeight];
    if (!image.format && !width) missing = "the VideoFrame is closed";
  }
  if (!missing && !(width > 0 && height > 0)) missing = `it is ${width}x${height} px (closed, or empty)`;
  if (missing) throw new Error(`${what}: ${missing}`);
  return [width, height];
}

// An image (IMAGE_SOURCES) as RGBA ImageData: at its natural size, or drawn to width x height.
export async function rgbaOf(image, what, width, height) {
  const [w, h] = naturalSize(image, what);
  if (isA(image, "ImageData") && (width ?? w) === w && (height ?? h) === h) return image;
  const canvas = new OffscreenCanvas(width ?? w, height ?? h);
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.imageSmoothingQuality = "high";
  const source = isA(image, "ImageData") ? await createImageBitmap(image) : image;
  context.drawImage(source, 0, 0, canvas.width, canvas.height);
  if (source !== image) source.close();
  return context.getImageData(0, 0, canvas.width, canvas.height);
}

// Images as the engine takes them: RGBA bytes and [count, height, width].  `pixels` is one image (IMAGE_SOURCES, at
// its natural size) or RGBA bytes (Uint8Array, Uint8ClampedArray or ArrayBuffer) of `count` images of width x height.
export async function imagesOf(pixels, size, what) {
  if (isImage(pixels)) {
    const { data, width, height } = await rgbaOf(pixels, what);
    return [new Uint8Array(data.buffer, data.byteOffset, data.byteLength), [1, height, width]];
  }
  const { width, height, count = 1 } = size ?? {};
  for (const [name, value] of [["width", width], ["height", height], ["count", count]]) {
    if (!Number.isInteger(value) || value < 1) {
      throw new TypeError(`${what}: ${name} must be a whole number of 1 or more (got ${value})`);
    }
  }
  const bytes = await bytesOf(pixels, what);
  if (!bytes) throw new TypeError(`${what} must be RGBA bytes or an image: ${IMAGE_SOURCES}`);
  return [bytes, [count, height, width]];
}
