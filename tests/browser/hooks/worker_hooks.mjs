// Test site only (build.py's TEST_SITE replaces the site's no-op web/worker_hooks.mjs with this file): the
// runPython message, which runs the code it is given in the worker's Python (tests/browser/test_in_pyodide.py).
export function registerHooks(handlers, { python, toJs }) {
  handlers.runPython = async ({ code }) => {
    const result = await python().runPythonAsync(code);
    return result && result.toJs ? toJs(result) : result;
  };
}
