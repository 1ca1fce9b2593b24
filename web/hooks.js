// The page's test hooks: none in the site.  The browser tests' copy of the site (build.py's TEST_SITE) replaces
// this file with tests/browser/hooks/hooks.js, which hands the worker RPC to the tests.
export function exposeHooks() {}
