// Audio for AudioTask: clips as the engine takes them ({wav} bytes, or {pcm, rate}: float32 mono samples), files the
// browser decodes (WebM, Ogg, MP3, ...) resampled to 16 kHz, and the microphone through Web Audio at 16 kHz with its
// level.
import { DataError } from "./errors.mjs";
import { isA } from "./inputs.mjs";

export const RATE = 16000;

// What a clip may be, in words.
export const CLIP_SOURCES = "a Float32Array of samples, an AudioBuffer, a Blob or File (WAV, WebM, Ogg, MP3, ...), " +
  "an ArrayBuffer or a Uint8Array of such a file";

const bytesOfFloats = (x) => new Uint8Array(x.buffer.slice(x.byteOffset, x.byteOffset + x.byteLength));

// An AudioBuffer's channels mixed down to one.
function monoOf(buffer) {
  const out = new Float32Array(buffer.length);
  for (let c = 0; c < buffer.numberOfChannels; c++) {
    const x = buffer.getChannelData(c);
    for (let i = 0; i < x.length; i++) out[i] += x[i] / buffer.numberOfChannels;
  }
  return out;
}

// A file's bytes decoded by the browser, resampled to RATE: {pcm, rate}.  DataError naming `name` when the browser
// cannot decode it.
async function decoded(bytes, name) {
  if (typeof OfflineAudioContext !== "function") {
    throw new DataError(`${name}: this browser context has no Web Audio to decode it; give a WAV file`);
  }
  const context = new OfflineAudioContext(1, 1, RATE);
  let buffer;
  try {
    buffer = await context.decodeAudioData(bytes.slice().buffer);
  } catch (err) {
    throw new DataError(`${name} is not audio this browser can decode (${err?.message || err}); give a WAV, WebM, ` +
      "Ogg or MP3 file");
  }
  return { pcm: bytesOfFloats(monoOf(buffer)), rate: buffer.sampleRate };
}

const isWav = (b) => b.length >= 12 && String.fromCharCode(...b.subarray(0, 4)) === "RIFF" &&
  String.fromCharCode(...b.subarray(8, 12)) === "WAVE";

// One clip as the engine takes it: WAV files as they are (the engine reads them), other files decoded here.
export async function clipOf(clip, rate, name) {
  if (clip instanceof Float32Array) {
    if (!Number.isFinite(rate)) throw new TypeError(`${name}: a Float32Array clip needs its rate (options.rate)`);
    return { pcm: bytesOfFloats(clip), rate };
  }
  if (isA(clip, "AudioBuffer")) return { pcm: bytesOfFloats(monoOf(clip)), rate: clip.sampleRate };
  let bytes;
  if (isA(clip, "Blob")) bytes = new Uint8Array(await clip.arrayBuffer());
  else if (clip instanceof ArrayBuffer) bytes = new Uint8Array(clip);
  else if (clip instanceof Uint8Array) bytes = clip;
  else throw new TypeError(`${name} must be ${CLIP_SOURCES}`);
  return isWav(bytes) ? { wav: bytes } : decoded(bytes, name);
}

// A clip or an array of clips, each as the engine takes it, and their names (files' own names).
export async function clipsOf(clips, rate, names, what) {
  const list = clips instanceof Float32Array || isA(clips, "AudioBuffer") || isA(clips, "Blob") ||
    clips instanceof ArrayBuffer || clips instanceof Uint8Array ? [clips] : Array.from(clips ?? []);
  const named = names ? Array.from(names, String)
    : list.map((c, i) => (isA(c, "File") && c.name ? c.name : `${what} ${i + 1}`));
  return [await Promise.all(list.map((c, i) => clipOf(c, rate, named[i]))), named];
}

// The microphone's samples reach the page in blocks of BLOCK (64 ms at 16 kHz).  A ScriptProcessorNode, not an
// AudioWorklet: a worklet's module must be a file of its own (a blob: URL does not load in a cross-origin isolated
// page), and a block's copy into the ring is all the work here.
const BLOCK = 1024;

const MICROPHONE_ERRORS = {
  NotAllowedError: "the microphone is not allowed for this page: allow it in the browser's site settings, or add " +
    "audio files instead",
  NotFoundError: "there is no microphone: connect one, or add audio files instead",
  NotReadableError: "the microphone is in use by another program or cannot be read",
};

// The microphone at 16 kHz: open() asks for it; record(seconds) resolves to the next `seconds` of samples;
// latest(samples) gives the last `samples` heard; onLevel(rms, peak) is called with each block's level.
export class Microphone {
  static async open({ onLevel } = {}) {
    if (!globalThis.navigator?.mediaDevices?.getUserMedia) {
      throw new Error("this browser gives no microphone to this page (it needs a secure origin: https or localhost)");
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: false,
        noiseSuppression: false, autoGainControl: false } });
    } catch (err) {
      const why = MICROPHONE_ERRORS[err?.name];
      throw Object.assign(new Error(why ? `No microphone: ${why}` : `No microphone: ${err?.message || err}`),
        { name: err?.name || "Error" });
    }
    const context = new AudioContext({ sampleRate: RATE });
    await context.resume();
    return new Microphone(stream, context, onLevel);
  }

  constructor(stream, context, onLevel) {
    Object.assign(this, { stream, context, onLevel, ring: new Float32Array(RATE * 4), written: 0, waiting: [] });
    this.node = context.createScriptProcessor(BLOCK, 1, 1);
    this.node.onaudioprocess = (e) => this._heard(e.inputBuffer.getChannelData(0));
    this.mute = context.createGain();
    this.mute.gain.value = 0; // the node runs only when connected to the output: silently
    this.source = context.createMediaStreamSource(stream);
    this.source.connect(this.node);
    this.node.connect(this.mute);
    this.mute.connect(context.destination);
  }

  get rate() { return this.context.sampleRate; }

  _heard(x) {
    let sum = 0, peak = 0;
    for (let i = 0; i < x.length; i++) {
      this.ring[(this.written + i) % this.ring.length] = x[i];
      sum += x[i] * x[i];
      peak = Math.max(peak, Math.abs(x[i]));
    }
    this.written += x.length;
    this.onLevel?.(Math.sqrt(sum / x.length), peak);
    for (const w of this.waiting) w.take(x);
    this.waiting = this.waiting.filter((w) => !w.done);
  }

  // The next `seconds` of sound, as a Float32Array at this.rate.
  record(seconds) {
    const out = new Float32Array(Math.round(seconds * this.rate));
    if (this.closed) return Promise.reject(new Error("the microphone is closed"));
    return new Promise((resolve, reject) => {
      let n = 0;
      const w = { done: false, reject, take: (x) => {
        const k = Math.min(x.length, out.length - n);
        out.set(x.subarray(0, k), n);
        n += k;
        if (n === out.length) { w.done = true; resolve(out); }
      } };
      this.waiting.push(w);
    });
  }

  // The last `samples` heard (fewer at the start), oldest first.
  latest(samples) {
    const n = Math.min(samples, this.written, this.ring.length);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.ring[(this.written - n + i) % this.ring.length];
    return out;
  }

  // Lets the microphone go; a record() still waiting rejects.
  async close() {
    this.closed = true;
    for (const w of this.waiting) w.reject(new Error("the microphone was stopped before the clip was recorded"));
    this.waiting = [];
    this.source.disconnect();
    this.node.disconnect();
    this.node.onaudioprocess = null;
    for (const track of this.stream.getTracks()) track.stop();
    await this.context.close();
  }
}
