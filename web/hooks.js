// The page's test hooks: none in the site.  The browser tests' copy of the site (build.py's TEST_SITE) replaces
// this file with tests/browser/hooks/hooks.js, which hands the tests the worker RPC and app.js's flows (each flow's
// task and what the flow returns for the tests) as window.onnxtrain.
export function exposeHooks() {}
