#!/usr/bin/env bash
# Issue 5's accuracy runs on the GPU machine: seed_cnn, classic_cnn and resnet18 on the cat/dog
# photographs with the seed's recipe, two seeds each, all six at once on one GPU (each run's wall
# time is its own, measured while the others share the GPU and the CPU cores). Then the
# Fashion-MNIST example, and the PyTorch check of a saved model's predictions.
#   bench/run_catdog.sh BUILD_DIR DATA_DIR
# Logs and models go to $OUT (default .); prints one summary line per run.
set -uo pipefail
build=${1:-build-gpu}
data=${2:-../shared/data/cats_dogs}
out=${OUT:-.}
app="$build/apps/catdog/loom-catdog"
work=$(mktemp -d)

run() {  # model seed
  local start=$(date +%s.%N)
  "$app" train --data "$data" --model "$1" --seed "$2" --workers 2 --out "$work/$1_$2.safetensors" \
    > "$work/$1_$2.log" 2>&1
  local rc=$?
  echo "wall_seconds $(echo "$(date +%s.%N) - $start" | bc) rc $rc" >> "$work/$1_$2.log"
}
for s in 1 2; do for m in seed_cnn classic_cnn resnet18; do run $m $s & done; done
wait
for s in 1 2; do for m in seed_cnn classic_cnn resnet18; do
  echo "== $m seed $s: $(grep "validation accuracy" "$work/${m}_$s.log" | tail -1) | $(tail -1 "$work/${m}_$s.log")"
done; done | tee "$out/catdog_summary.txt"
cat "$work"/*.log > "$out/catdog_logs.txt"
cp "$work/seed_cnn_1.metrics.csv" "$out/" 2>/dev/null
python3 tools/plot_metrics.py "$work/seed_cnn_1.metrics.csv" -o "$out/seed_cnn_1.png" 2>&1 | tail -1

start=$(date +%s.%N)
"$build/examples/fashion_mnist" --device cuda --epochs 10 > "$out/fashion_mnist.txt" 2>&1
echo "fashion_mnist rc $? wall $(echo "$(date +%s.%N) - $start" | bc) s: $(tail -2 "$out/fashion_mnist.txt" | tr '\n' ' ')"

"$app" predict --model "$work/seed_cnn_1.safetensors" --dump "$work/dump.safetensors" \
  $(ls "$data"/val/cat/*.jpg | head -20) $(ls "$data"/val/dog/*.jpg | head -20) > "$out/predict.txt" 2>&1
head -3 "$out/predict.txt"
python3 tools/compare_torch.py "$work/seed_cnn_1.safetensors" "$work/dump.safetensors" 2>&1 | tail -3
