// Where the page computes: on the GPU through WebGPU where this browser has an adapter, else on the CPU (wasm).
// The choice is the user's; each session then says where it runs (a worker without WebGPU falls back to wasm).
import { $ } from "./ui.js";

export const PROVIDER_NAMES = { webgpu: "the GPU (WebGPU)", wasm: "the CPU (wasm)", cpu: "the CPU" };

export async function setUpCompute() {
  const select = $("compute");
  const adapter = navigator.gpu ? await navigator.gpu.requestAdapter().catch(() => null) : null;
  const gpu = select.querySelector('option[value="webgpu"]');
  gpu.disabled = !adapter;
  if (!adapter) gpu.textContent = "GPU (WebGPU): this browser has no WebGPU adapter";
  select.value = adapter ? "webgpu" : "wasm";
  return adapter ? "webgpu" : "wasm";
}

// onnxruntime-web's executionProviders for the user's choice: WebGPU, or wasm if the worker cannot use it.
export function executionProviders() {
  return $("compute").value === "webgpu" ? ["webgpu", "wasm"] : ["wasm"];
}
