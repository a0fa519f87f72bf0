// `loom-catdog train --recipe`: named presets of the training flags. "seed" (the default) is the
// seed program's recipe, untouched; "fast" aims at issue 35's time to accuracy (90% validation
// accuracy on the 96-pixel photographs in <= 10 s on one H200; docs in apps/catdog/README.md).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "commands.h"

namespace loom::catdog {

// The flags (long names without "--") a recipe may set; main.cpp records in TrainArgs::given
// which of them the user gave, and those keep the user's values.
const std::vector<std::string>& recipe_flags();

// `args` with args.recipe's settings applied to every flag of recipe_flags() not in args.given.
// "fast": resnet18 with a stride-2 stem at the photographs' native 96 pixels (64 for a --model
// seed_cnn or classic_cnn of the user's), batch 128 without the short last one, validation in
// batches of 128, lr 0.002 with AdamW (weight decay 0.05), 30 epochs, cosine decay after a
// 1-epoch linear warm-up, label smoothing 0.1, horizontal-flip TTA in validation; on CUDA also
// bf16 and channels-last (on the CPU these stay off: it computes in fp32). "seed": `args`
// unchanged. Throws on an unknown recipe.
TrainArgs resolve_recipe(TrainArgs args, const Device& device);

// The header's line for a recipe other than "seed": its resolved settings, which of them the user
// gave, and what the device left off; empty for "seed".
std::string recipe_summary(const TrainArgs& resolved, const Device& device);

}  // namespace loom::catdog
