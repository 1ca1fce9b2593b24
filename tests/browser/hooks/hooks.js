// Test site only (build.py's TEST_SITE replaces the site's no-op web/hooks.js with this file): the worker RPC as
// window.onnxtrain, which conftest's Page.call uses.
export function exposeHooks({ call, ready }) {
  window.onnxtrain = { call, ready };
}
