// Test site only (build.py's TEST_SITE replaces the site's no-op web/hooks.js with this file): window.onnxtrain, the
// one test hook of the page (conftest's Page.call): the engine's start, requests to the engine by name (runPython,
// snapshotSaved), each flow's current task (tasks) and what each flow hands the tests (flows: app.js's).
import { _engineCall } from "./onnxtrain/onnxtrain.mjs";

export function exposeHooks({ ready, flows }) {
  const tasks = Object.fromEntries(Object.entries(flows).map(([name, flow]) => [name, () => flow.task()]));
  window.onnxtrain = { ready, tasks, flows, call: (method, args = {}) => _engineCall(method, args) };
}
