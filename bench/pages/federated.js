// One page = one client of the federation served by `python -m onnxtrain federate`, through the library's
// Federation API as the app's panel uses it (without the UI and without onStatus): the engine's start, the
// federation's session, the page's own CSV, then join() until the run ends.  bench.begin() returns at once; the
// bench reads bench.phase ("starting" | "joined" | "done" | "failed") and bench.out, filled in as the page goes
// (a page may still be polling when the server stops).  Times are epoch milliseconds (Date.now()), so that the
// bench can line them up with the server's rounds.
import { Federation, start } from "../onnxtrain/onnxtrain.mjs";

const bench = { ready: true, phase: "idle", error: null, out: null };
window.bench = bench;

async function run({ dataUrl, fedUrl }) {
  const out = { rounds: [], began: Date.now() };
  bench.out = out;
  let t = performance.now();
  await start();
  out.engineMs = performance.now() - t;
  t = performance.now();
  const fed = await Federation.connect(fedUrl);
  const session = await fed.session();
  out.sessionMs = performance.now() - t;
  const data = new Uint8Array(await window.benchUtil.bytes(dataUrl));
  const { dataset, rows } = await session.readDataset(data, dataUrl.split("/").pop());
  out.rows = rows;
  out.parameters = fed.info.parameters;
  const open = new Map(); // round -> its entry while the page trains
  const onRound = ({ round, phase, local, error }) => {
    if (phase === "training") {
      const entry = { round, training: Date.now() };
      open.set(round, entry);
      out.rounds.push(entry);
      return;
    }
    const entry = open.get(round) ?? { round };
    Object.assign(entry, { [phase]: Date.now(), local, error: error ?? null });
    open.delete(round);
  };
  bench.phase = "joined";
  out.joined = Date.now();
  try {
    const ended = await fed.join({ session, dataset, onRound });
    out.reason = ended.reason;
    out.roundsSent = ended.rounds;
  } finally {
    out.ended = Date.now();
    await session.release();
  }
}

bench.begin = (options) => {
  bench.phase = "starting";
  run(options).then(() => {
    bench.phase = "done";
  }, (err) => {
    bench.error = String(err?.stack ?? err);
    bench.phase = "failed";
  });
};
