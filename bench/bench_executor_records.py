"""Where a program's time goes, record by record: each record of the wasm provider's program (web/kernels/
executor.c) timed on its own, the same pointer table as the whole run, in CPython on the native build, one thread.
Reported: per executor op and the graph op it runs, the mean ms a run and the share of the total (the records run
alone lose the cache their neighbours warm, so the shares are what to read).

Models: ``minilm``, the text task's encoder on a batch of --batch texts of --tokens tokens (site/artifacts/minilm);
``efficientnet``, the personalization backbone on --batch frames (site/artifacts/efficientnet_lite0).  Needs the
site's artifacts (`python3 build.py site`) and the native build (`python3 build.py native`).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import ctypes  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
import build  # noqa: E402
from onnxtrain.ops import simd  # noqa: E402


def session_and_feeds(model: str, batch: int, tokens: int):
    rng = np.random.default_rng(0)
    if model == "minilm":
        from onnxtrain.tasks.text import Encoder
        encoder = Encoder((build.SITE / "artifacts" / "minilm" / "encoder.onnx").read_bytes(), "wasm")
        ids = rng.integers(1000, 5000, (batch, tokens)).astype(np.int64)
        return encoder.session, [ids, np.ones_like(ids)]
    from onnxtrain.tasks.backbone import Backbone
    backbone = Backbone((build.SITE / "artifacts" / "efficientnet_lite0" / "backbone.onnx").read_bytes(),
                        device="wasm")
    from onnxtrain.ir.dtypes import to_numpy
    session = backbone.embedder
    feed = session.plan.input_info[0].type
    shape = [d if isinstance(d, int) else batch for d in feed.shape]
    return session, [rng.integers(0, 256, shape).astype(to_numpy(feed.elem_type))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["minilm", "efficientnet"], default="minilm")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not simd.available():
        sys.exit("bench_executor_records: the native kernels are not loaded (python3 build.py native)")
    session, feeds = session_and_feeds(args.model, args.batch, args.tokens)
    for _ in range(3):
        session.run(feeds)
    t0 = time.perf_counter()
    for _ in range(args.runs):
        session.run(feeds)
    whole = (time.perf_counter() - t0) / args.runs
    runner = session.last_runner
    if runner is None or len(runner.segments) != 1 or runner.segments[0][0] != "calls":
        sys.exit(f"the program has host nodes: {session.fallbacks}")
    words, calls = runner.segments[0][1][0], runner.segments[0][2]
    records, at = [], 0
    while at < len(words):
        n = 2 + int(words[at + 1])
        records.append(np.ascontiguousarray(words[at:at + n]))
        at += n
    table = ctypes.byref(runner.table)
    spent = collections.Counter()
    for _ in range(args.runs):
        for record, call in zip(records, calls):
            t = time.perf_counter()
            simd._lib.run_program(ctypes.c_void_p(record.ctypes.data), len(record), table)
            spent[(call.op, call.node.op_type if call.node is not None else "?")] += time.perf_counter() - t
    total = sum(spent.values())
    print(f"{args.model}, batch {args.batch}: the whole program {whole * 1e3:.2f} ms a run, its {len(records)} "
          f"records one by one {total / args.runs * 1e3:.2f} ms")
    for (op, node), seconds in spent.most_common(12):
        print(f"{seconds / args.runs * 1e3:9.3f} ms {100 * seconds / total:5.1f}%  {op} ({node})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
