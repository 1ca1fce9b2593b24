"""WebGPU speed: onnxtrain's WGSL matrix kernel against cuBLAS, and a training step of Module(device="webgpu")
against PyTorch, each as a ratio measured in the same run (medians).  It runs through wgpu on whatever adapter
wgpu finds: on a real GPU (an NVIDIA H100 over Vulkan, see shared/research/webgpu.md) for speed; on a software
adapter (lavapipe) the figures measure overhead only.

usage: python bench/bench_webgpu.py [--quick] [--reps N] [--json out.json]
needs: numpy, flatbuffers, wgpu; torch (CUDA when there is a GPU) for the ratios.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pysrc"))
from onnxtrain import api, artifacts  # noqa: E402
from onnxtrain.ir.dtypes import DataType  # noqa: E402
from onnxtrain.ir.model import Graph, Model, Node, TensorType, ValueInfo  # noqa: E402
from onnxtrain.tasks.tabular import mlp_model  # noqa: E402
from onnxtrain.runtime.residency import Residency  # noqa: E402
from onnxtrain.runtime import Session  # noqa: E402
from onnxtrain.webgpu import open_provider  # noqa: E402


ROUNDS = 5


def timed(fn, reps: int, rounds: int = ROUNDS) -> float:
    """Median seconds per call of ``fn`` (which must wait for its own work) over ``rounds`` of ``reps``."""
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


def torch_device():
    try:
        import torch
    except ImportError:
        return None, None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, ("cuda" if torch.cuda.is_available() else "cpu")


def sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def matmul_model(n: int) -> Model:
    vi = [ValueInfo(name, TensorType(DataType.FLOAT, [n, n])) for name in ("A", "B", "Y")]
    graph = Graph(name="matmul", nodes=[Node("MatMul", ["A", "B"], ["Y"])], inputs=vi[:2], outputs=vi[2:])
    return Model(graph=graph, ir_version=8, opset_imports={"": 17})


def bench_gemm(sizes: list, reps: int) -> list:
    torch, tdev = torch_device()
    gpu = open_provider()
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
        session = Session(matmul_model(n), gpu)
        held = Residency(gpu)
        feeds = [held.resident(a), held.resident(b)]
        got = session.run(feeds)[0]
        err = float(np.max(np.abs(got - a.astype(np.float64) @ b)) / np.max(np.abs(a.astype(np.float64) @ b)))

        def ours():
            session.run(feeds, [])
            gpu.device.finish()
        seconds = timed(ours, reps)
        row = {"n": n, "webgpu_ms": seconds * 1e3, "webgpu_gflops": 2 * n ** 3 / seconds / 1e9, "max_rel_err": err,
               "dispatches": session.last_program.dispatch_count}
        if torch is not None:
            ta, tb = torch.from_numpy(a).to(tdev), torch.from_numpy(b).to(tdev)

            def theirs():
                torch.matmul(ta, tb)
                sync(torch, tdev)
            t = timed(theirs, reps)
            row.update(torch_device=tdev, torch_gflops=2 * n ** 3 / t / 1e9, ratio=t / seconds)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def bench_mlp_step(n_in: int, hidden: list, batch: int, reps: int) -> dict:
    """A training step (train, AdamW, reset) of an MLP, with the loss read back each step on both sides."""
    torch, tdev = torch_device()
    n_out = 10
    forward = mlp_model(n_in, hidden, n_out)
    files = artifacts.generate_artifacts(forward, requires_grad=[t.name for t in forward.graph.initializers],
                                         loss=artifacts.LossType.CrossEntropyLoss,
                                         optimizer=artifacts.OptimType.AdamW)
    state = api.CheckpointState.load_checkpoint(files["checkpoint"])
    module = api.Module(files["training_model.onnx"], state, files["eval_model.onnx"], device="webgpu")
    optimizer = api.Optimizer(files["optimizer_model.onnx"], module)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, n_in), dtype=np.float32)
    y = rng.integers(0, n_out, batch).astype(np.int64)
    gpu = module._train.provider.device

    def ours():
        float(module(x, y))
        optimizer.step()
        module.lazy_reset_grad()
    before = gpu.submissions
    seconds = timed(ours, reps)
    steps = 1 + ROUNDS * reps   # timed() calls once before its rounds
    row = {"model": f"MLP {n_in}-{'-'.join(map(str, hidden))}-{n_out}", "batch": batch, "webgpu_ms": seconds * 1e3,
           "submissions_per_step": (gpu.submissions - before) / steps,
           "dispatches_per_step": module._train.last_program.dispatch_count
           + optimizer._session.last_program.dispatch_count,
           "fallbacks": module.device_report()["fallbacks"]}
    if torch is not None:
        layers, width = [], n_in
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
            width = h
        net = torch.nn.Sequential(*layers, torch.nn.Linear(width, n_out)).to(tdev)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
        tx, ty = torch.from_numpy(x).to(tdev), torch.from_numpy(y).to(tdev)

        def theirs():
            loss = torch.nn.functional.cross_entropy(net(tx), ty)
            loss.backward()
            opt.step()
            opt.zero_grad()
            loss.item()
        t = timed(theirs, reps)
        row.update(torch_device=tdev, torch_ms=t * 1e3, ratio=seconds / t)
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (the default on a software adapter)")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    gpu = open_provider().device
    print("adapter:", json.dumps(gpu.adapter_info), flush=True)
    quick = args.quick or str(gpu.adapter_info.get("adapter_type", "")).upper() == "CPU"
    reps = args.reps or (2 if quick else 20)
    result = {"adapter": gpu.adapter_info, "date": time.strftime("%Y-%m-%d"),
              "gemm": bench_gemm([64, 128] if quick else [1024, 2048, 4096], reps),
              "mlp": bench_mlp_step(*((64, [128], 32) if quick else (1024, [4096, 4096], 256)), reps)}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
