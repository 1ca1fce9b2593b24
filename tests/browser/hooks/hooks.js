// Test site only (build.py's TEST_SITE replaces the site's no-op web/hooks.js with this file): window.onnxtrain for
// the tests (conftest's Page.call): the engine's start, requests to the engine by name (runPython, snapshotSaved)
// and the app's current task of each flow.
import { _engineCall } from "./onnxtrain/onnxtrain.mjs";

export function exposeHooks({ ready, tasks }) {
  window.onnxtrain = { ready, tasks, call: (method, args = {}) => _engineCall(method, args) };
}
