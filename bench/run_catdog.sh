#!/usr/bin/env bash
# Issue 5's accuracy runs on the GPU machine: seed_cnn, classic_cnn and resnet18 on the cat/dog
# photographs with the seed's recipe, two seeds each, all six at once on one GPU (each run's wall
# time is its own, measured while the others share the GPU and the CPU cores). Then the
# Fashion-MNIST example, and the PyTorch check of a saved model's predictions.
#   bench/run_catdog.sh BUILD_DIR DATA_DIR
# Logs and models go to $OUT (default .); prints one summary line per run.
# EXTRA_TRAIN_ARGS: more flags for every train run (split on spaces), e.g. "--resize nearest" or
#   "--weight-decay 0.05 --epochs 40".
# FASHION_DIR: the Fashion-MNIST folder for the example (--data), when not in its default place.
set -uo pipefail
build=${1:-build-gpu}
data=${2:-../shared/data/cats_dogs}
out=${OUT:-.}
app="$build/apps/catdog/loom-catdog"
work=$(mktemp -d)
read -r -a extra_train_args <<< "${EXTRA_TRAIN_ARGS:-}"

# Seconds since a `date +%s%N` stamp, to the millisecond, in bash arithmetic (no bc there).
seconds_since() {
  local ms=$(( ($(date +%s%N) - $1) / 1000000 ))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

run() {  # model seed
  local start=$(date +%s%N)
  "$app" train --data "$data" --model "$1" --seed "$2" --workers 2 --out "$work/$1_$2.safetensors" \
    "${extra_train_args[@]}" > "$work/$1_$2.log" 2>&1
  local rc=$?
  echo "wall_seconds $(seconds_since "$start") rc $rc" >> "$work/$1_$2.log"
}
[ -n "${EXTRA_TRAIN_ARGS:-}" ] && echo "extra train flags: ${EXTRA_TRAIN_ARGS}"
for s in 1 2; do for m in seed_cnn classic_cnn resnet18; do run $m $s & done; done
wait
for s in 1 2; do for m in seed_cnn classic_cnn resnet18; do
  echo "== $m seed $s: $(grep "validation accuracy" "$work/${m}_$s.log" | tail -1) | $(tail -1 "$work/${m}_$s.log")"
done; done | tee "$out/catdog_summary.txt"
cat "$work"/*.log > "$out/catdog_logs.txt"
cp "$work/seed_cnn_1.metrics.csv" "$out/" 2>/dev/null
python3 tools/plot_metrics.py "$work/seed_cnn_1.metrics.csv" -o "$out/seed_cnn_1.png" 2>&1 | tail -1

fashion_args=(--device cuda --epochs 10)
[ -n "${FASHION_DIR:-}" ] && fashion_args+=(--data "$FASHION_DIR")
start=$(date +%s%N)
"$build/examples/fashion_mnist" "${fashion_args[@]}" > "$out/fashion_mnist.txt" 2>&1
rc=$?
echo "fashion_mnist rc $rc wall $(seconds_since "$start") s: $(tail -2 "$out/fashion_mnist.txt" | tr '\n' ' ')"

"$app" predict --model "$work/seed_cnn_1.safetensors" --dump "$work/dump.safetensors" \
  $(ls "$data"/val/cat/*.jpg | head -20) $(ls "$data"/val/dog/*.jpg | head -20) > "$out/predict.txt" 2>&1
head -3 "$out/predict.txt"
python3 tools/compare_torch.py "$work/seed_cnn_1.safetensors" "$work/dump.safetensors" 2>&1 | tail -3
