// `loom-catdog import`: a PyTorch state_dict saved with safetensors (safetensors.torch.save_file
// of a model of the same architecture as one of loom's zoo: seed_cnn, classic_cnn or resnet18)
// made into a loom model file that predict and evaluate take. The names go through the zoo
// model's name map (io/torch_import.h); the head's rows choose the head: 1 logit is a sigmoid
// over two classes, K > 1 logits a softmax over K. Anything that does not fit is refused naming
// the tensors. The preprocessing recorded is torchvision's ToTensor at the given size, then
// Normalize(--mean, --std) when given.
#include <algorithm>
#include <iostream>

#include "commands.h"
#include "loom/io/torch_import.h"
#include "output_paths.h"

namespace loom::catdog {

namespace {

// seed_cnn and classic_cnn end in a Linear over a flattened 64x64 feature map; resnet18's
// global average pool takes any size its three stride-2 stages leave at least 1x1.
void check_image_size(const std::string& model, int64_t size) {
  if (model == "resnet18") {
    LOOM_CHECK(size >= 8 && size <= 1024, "import --image-size: resnet18 takes 8 to 1024, got ",
               size);
  } else {
    LOOM_CHECK(size == 64, "import --image-size: ", model,
               " takes 64x64 images only (its Linear layer is sized for them), got ", size);
  }
}

}  // namespace

int run_import(const ImportArgs& args) {
  const auto& models = io::torch_importable_models();
  LOOM_CHECK(std::find(models.begin(), models.end(), args.model) != models.end(),
             "import --model: expected seed_cnn, classic_cnn or resnet18 (loom's zoo models, "
             "whose PyTorch definitions apps/catdog/README.md shows), got \"",
             args.model, "\"");
  check_image_size(args.model, args.image_size);
  LOOM_CHECK(args.mean.size() == args.std.size() && (args.mean.empty() || args.mean.size() == 3),
             "import --mean and --std: three values each (R,G,B, as torchvision's Normalize "
             "takes them) or neither, got ",
             args.mean.size(), " and ", args.std.size());
  for (double s : args.std) LOOM_CHECK(s > 0, "import --std: values must be positive, got ", s);
  const std::optional<data::Interpolation> interpolation = io::interpolation_from_name(args.resize);
  LOOM_CHECK(interpolation.has_value(),
             "import --resize: expected nearest, bilinear or area, got \"", args.resize, "\"");
  check_output_path("--out", args.out);  // before reading anything

  const io::TensorFile weights = io::load_safetensors(args.weights);
  io::TorchImport imported;
  try {
    imported = io::import_torch_state_dict(args.model, weights.tensors);
  } catch (const Error& e) {
    LOOM_FAIL("import: the weights in ", args.weights, " are not a ", args.model, "'s: ", e.what());
  }
  // One logit is p(label 1), so it still names two classes; K logits name K.
  const int64_t classes = std::max<int64_t>(2, imported.num_outputs);
  std::string given;
  for (const std::string& c : args.classes) given += (given.empty() ? "" : ",") + c;
  LOOM_CHECK(static_cast<int64_t>(args.classes.size()) == classes, "import --classes: the head (",
             io::torch_head_name(args.model), ") has ", imported.num_outputs, " output",
             imported.num_outputs == 1 ? " (a sigmoid over two classes)" : "s (a softmax)",
             ", so it takes ", classes, " class names, label 0 first; got ", args.classes.size(),
             " (", given, ")");
  io::Preprocessing prep;
  prep.height = prep.width = args.image_size;
  prep.interpolation = *interpolation;
  prep.class_names = args.classes;
  prep.mean = args.mean;
  prep.std = args.std;
  io::save_model(args.out, *imported.model, prep, {{"loom.imported_from", args.weights}});
  for (const std::string& note : imported.notes) std::cout << "loom-catdog: note: " << note << "\n";
  std::cout << "loom-catdog: imported " << args.weights << " (" << weights.tensors.size()
            << " tensors, " << imported.model->num_parameters() << " parameters) as " << args.model
            << " with "
            << (imported.num_outputs == 1
                    ? std::string("1 logit (sigmoid)")
                    : std::to_string(imported.num_outputs) + " logits (softmax)")
            << " into " << args.out << "\n";
  return 0;
}

}  // namespace loom::catdog
