// `loom-catdog import`: a PyTorch state_dict saved with safetensors (safetensors.torch.save_file
// of the same architecture as loom's zoo model, e.g. bench/train_step_torch.py's seed_cnn) made
// into a loom model file that predict and evaluate take. The names, shapes and layouts are
// PyTorch's own (nn.Sequential's "0.weight", ..., Conv2d [out, in, kh, kw], Linear [out, in],
// Flatten over C, H, W), so the tensors load as they are; anything that does not fit is refused
// naming the tensors. The preprocessing recorded is torchvision's ToTensor at the given size.
#include <iostream>

#include "commands.h"
#include "output_paths.h"

namespace loom::catdog {

int run_import(const ImportArgs& args) {
  LOOM_CHECK(args.model == "seed_cnn" || args.model == "classic_cnn",
             "import --model: expected seed_cnn or "
             "classic_cnn (whose PyTorch nn.Sequential has loom's tensor names), got \"",
             args.model, "\"");
  LOOM_CHECK(args.classes.size() == 2,
             "import --classes: the zoo's binary head takes two class names "
             "(label 0, then label 1), got ",
             args.classes.size());
  const std::optional<data::Interpolation> interpolation = io::interpolation_from_name(args.resize);
  LOOM_CHECK(interpolation.has_value(),
             "import --resize: expected nearest, bilinear or area, got \"", args.resize, "\"");
  check_output_path("--out", args.out);  // before reading anything

  const io::TensorFile weights = io::load_safetensors(args.weights);
  auto model = args.model == "seed_cnn" ? std::shared_ptr<nn::Module>(nn::seed_cnn())
                                        : std::shared_ptr<nn::Module>(nn::classic_cnn());
  try {
    model->load_state_dict(weights.tensors, /*strict=*/true);
  } catch (const Error& e) {
    LOOM_FAIL("import: the weights in ", args.weights, " are not a ", args.model, "'s: ", e.what());
  }
  io::Preprocessing prep;
  prep.height = prep.width = 64;
  prep.interpolation = *interpolation;
  prep.class_names = args.classes;
  io::save_model(args.out, *model, prep, {{"loom.imported_from", args.weights}});
  std::cout << "loom-catdog: imported " << args.weights << " (" << weights.tensors.size()
            << " tensors, " << model->num_parameters() << " parameters) as " << args.model
            << " into " << args.out << "\n";
  return 0;
}

}  // namespace loom::catdog
