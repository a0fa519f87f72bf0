#!/usr/bin/env bash
# The optional reference tests: loom against independent implementations from PyPI (numpy,
# safetensors, scipy, tf-keras on tensorflow-cpu, tensorboard, torch and torchvision for the
# PyTorch import, onnx and onnxruntime for the ONNX export). Installs them into a virtual environment
# under build-reference/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python3 -m venv build-reference/venv
build-reference/venv/bin/pip install -q numpy safetensors scipy tensorflow-cpu tf-keras tensorboard \
  torch torchvision onnx onnxruntime
export PATH="$PWD/build-reference/venv/bin:$PATH"
cmake -S . -B build-reference -G Ninja -DLOOM_CUDA=OFF -DLOOM_REFERENCE_TESTS=ON -DLOOM_BUILD_BENCH=OFF
cmake --build build-reference -j "$(nproc)"
ctest --test-dir build-reference -L reference --output-on-failure "$@"
