// Test site only (build.py's TEST_SITE replaces the library's no-op engine_hooks.mjs with this file): requests the
// tests send to the engine, beside the registry's: runPython (run code in the engine's Python,
// tests/browser/test_in_pyodide.py), snapshotSaved (whether this start stored a memory snapshot) and fastSteps
// (how many train steps the engine answered without Python, and for which sessions it holds a description).
export function registerHooks(hooks, { python, snapshotSaved, fastSteps }) {
  hooks.runPython = async ({ code }) => {
    const result = await python().runPythonAsync(code);
    if (!result || !result.toJs) return result;
    const value = result.toJs({ dict_converter: Object.fromEntries });
    result.destroy();
    return value;
  };
  hooks.snapshotSaved = () => snapshotSaved();
  hooks.fastSteps = () => {
    const fast = fastSteps();
    return fast ? { steps: fast.steps, ms: fast.ms, sessions: [...fast.sessions.keys()] } : null;
  };
}
