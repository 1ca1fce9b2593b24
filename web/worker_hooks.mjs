// The worker's test hooks: none in the site.  The browser tests' copy of the site (build.py's TEST_SITE) replaces
// this file with tests/browser/hooks/worker_hooks.mjs, which adds a message for the tests.
export function registerHooks() {}
