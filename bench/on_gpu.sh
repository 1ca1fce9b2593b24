#!/usr/bin/env bash
# bench_webgpu.py on a lent GPU machine (CPython 3.12 and torch, no network): installs what
# `python3 build.py device-kit` put in .cache/device-kit (carried along), then runs the bench on NVIDIA's
# Vulkan driver.  Writes $OUT/webgpu.json when OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.cache/device-kit
for deb in "$kit"/*.deb; do dpkg -x "$deb" /; done
ldconfig
python3 -m pip install -q --no-index --no-deps --target /tmp/onnxtrain-pylib "$kit"/*.whl
export PYTHONPATH=/tmp/onnxtrain-pylib XDG_RUNTIME_DIR=/tmp
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
python3 bench/bench_webgpu.py ${OUT:+--json "$OUT/webgpu.json"} "$@"
