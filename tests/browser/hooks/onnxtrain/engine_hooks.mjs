// Test site only (build.py's TEST_SITE replaces the library's no-op engine_hooks.mjs with this file): requests the
// tests send to the engine, beside the registry's: runPython (run code in the engine's Python,
// tests/browser/test_in_pyodide.py) and snapshotSaved (whether this start stored a memory snapshot).
export function registerHooks(hooks, { python, snapshotSaved }) {
  hooks.runPython = async ({ code }) => {
    const result = await python().runPythonAsync(code);
    if (!result || !result.toJs) return result;
    const value = result.toJs({ dict_converter: Object.fromEntries });
    result.destroy();
    return value;
  };
  hooks.snapshotSaved = () => snapshotSaved();
}
