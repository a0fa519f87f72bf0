#!/usr/bin/env bash
# The README's "run the main job" command: installs what is missing, builds loom, and runs the
# main program. Arguments go to the program.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target fit_two_layer
exec build/examples/fit_two_layer "$@"
