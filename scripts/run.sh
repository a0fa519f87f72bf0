#!/usr/bin/env bash
# The README's "run the main job" command: installs what is missing, builds loom, and trains the
# cat/dog CNN with the seed's recipe (loom-catdog train), printing the validation accuracy.
# Data: ../shared/data/cats_dogs or ./data/cats_dogs (train/ and val/, one folder per class);
# with neither, loom-catdog says what to provide and trains on Fashion-MNIST instead.
# Without a GPU it trains 5 epochs instead of 25. Arguments go to `loom-catdog train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target loom-catdog

defaults=()
if ! nvidia-smi -L >/dev/null 2>&1 && [[ " $* " != *" --epochs "* ]]; then
  echo "run.sh: no GPU here, so 5 epochs on the CPU instead of the recipe's 25 (pass --epochs to choose)"
  defaults=(--epochs 5)
fi
exec build/apps/catdog/loom-catdog train "${defaults[@]}" "$@"
