// The engine's hooks: none in the library.  The browser tests' copy of the site (build.py's TEST_SITE) replaces this
// file with tests/browser/hooks/onnxtrain/engine_hooks.mjs, which adds requests that run Python code.
export function registerHooks() {}
