// The presets of `loom-catdog train --recipe` (recipe.h). The "fast" values come from the recipe
// sweep on an H100 (bench/recipe_sweep.py; docs/benchmarks.md has the table): the strided stem
// over 30 epochs is what first reached 90%, five seeds of five.
#include "recipe.h"

#include <cstdio>
#include <sstream>

namespace loom::catdog {

namespace {

bool user_gave(const TrainArgs& a, const std::string& flag) { return a.given.count(flag) > 0; }

// "%g" of a value, for the summary line.
std::string recipe_value(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace

const std::vector<std::string>& recipe_flags() {
  static const std::vector<std::string> flags = {"model",
                                                 "image-size",
                                                 "stem-stride",
                                                 "batch-size",
                                                 "val-batch-size",
                                                 "drop-last",
                                                 "lr",
                                                 "weight-decay",
                                                 "epochs",
                                                 "lr-schedule",
                                                 "warmup-epochs",
                                                 "label-smoothing",
                                                 "tta",
                                                 "precision",
                                                 "channels-last",
                                                 "validation-from"};
  return flags;
}

TrainArgs resolve_recipe(TrainArgs a, const Device& device) {
  LOOM_CHECK(a.recipe == "seed" || a.recipe == "fast", "--recipe: expected seed or fast, got \"",
             a.recipe, "\"");
  if (a.recipe == "seed") return a;
  auto set = [&a](const std::string& flag, auto& field, auto value) {
    if (!user_gave(a, flag)) field = value;
  };
  set("model", a.model, std::string("resnet18"));
  // The shared photographs' longer side; seed_cnn and classic_cnn (a --model of the user's) take
  // 64 pixels only.
  if (a.model == "resnet18") {
    set("image-size", a.image_size, int64_t{96});
    // A quarter of the work after the stem, for the same weights: at 10 epochs the full-size stem
    // reached 78%; this one ran 30 epochs in about the same 15 s (5.4 ms a step against 16) and
    // reached 91%.
    set("stem-stride", a.stem_stride, int64_t{2});
  }
  set("batch-size", a.batch_size, int64_t{128});
  // Every training step and every validation batch then has one shape (validation pads its
  // last: train::evaluate), so epoch 1 chooses convolution algorithms for one batch size only.
  // On the H100, with validation batches of 256 (and a last of 208) beside training's 128 and
  // its last of 112, epoch 1's steps took ~4.1 s and its validation ~4.2 s, mostly searching.
  set("val-batch-size", a.val_batch_size, a.batch_size);
  set("drop-last", a.drop_last, true);
  set("lr", a.lr, 2e-3);
  set("weight-decay", a.weight_decay, 0.05);
  set("epochs", a.epochs, int64_t{30});
  set("lr-schedule", a.lr_schedule, std::string("cosine"));
  // A warm-up only before a cosine decay it leaves epochs for (a constant rate with
  // --warmup-epochs is refused: lr_plan.h), so --lr-schedule constant or --epochs 1 still run.
  if (!user_gave(a, "warmup-epochs") && a.lr_schedule == "cosine" && a.epochs > 1) {
    a.warmup_epochs = 1;
    a.warmup_given = true;  // so the one-rank cosine warms up (lr_plan.h)
  }
  set("label-smoothing", a.label_smoothing, 0.1);
  set("tta", a.tta, true);
  // Validation (with its flipped second pass) cost ~0.1 s an epoch on the H100, a quarter of
  // one, and no epoch before the 22nd of ten 30-epoch runs reached 90% (seed 1's best by epoch 15
  // was 84%): the first 15 epochs' passes only cost time.
  set("validation-from", a.validation_from, int64_t{16});
  if (device.is_cuda()) {
    set("precision", a.precision, std::string("bf16"));
    set("channels-last", a.channels_last, true);
    // --conv-benchmark stays off: timing cuDNN's algorithms cost 1.4 s of the first epoch and
    // made a step 0.2 ms (3%) faster, 0.9 s over 30 epochs.
  }
  return a;
}

std::string recipe_summary(const TrainArgs& r, const Device& device) {
  if (r.recipe == "seed") return "";
  std::ostringstream s;
  s << "loom-catdog: recipe " << r.recipe << ": model " << r.model;
  if (r.model == "resnet18") s << " (stem stride " << r.stem_stride << ")";
  s << ", image size " << r.image_size << ", batch " << r.batch_size
    << (r.drop_last ? " (short last batch left out)" : "") << ", validation batch "
    << r.val_batch_size << ", lr " << recipe_value(r.lr) << ", weight decay "
    << recipe_value(r.weight_decay) << ", " << r.epochs << " epochs, lr "
    << "schedule " << r.lr_schedule
    << (r.warmup_given && r.warmup_epochs > 0
            ? " after a " + std::to_string(r.warmup_epochs) + "-epoch warm-up"
            : std::string())
    << ", validating from epoch " << r.validation_from << ", label smoothing "
    << recipe_value(r.label_smoothing) << ", flip TTA " << (r.tta ? "on" : "off") << ", precision "
    << r.precision << ", channels-last " << (r.channels_last ? "on" : "off");
  std::string given;
  for (const std::string& flag : recipe_flags())
    if (user_gave(r, flag)) given += (given.empty() ? "" : ", ") + ("--" + flag);
  if (!given.empty()) s << "; yours: " << given;
  if (!device.is_cuda()) s << "; on the CPU bf16 and channels-last stay off";
  s << "\n";
  return s.str();
}

}  // namespace loom::catdog
