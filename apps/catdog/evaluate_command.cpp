// `loom-catdog evaluate`: a model file's accuracy, loss and confusion matrix on a folder of
// class folders (DIR/val, DIR/test_set, or DIR itself), with per-class precision, recall and F1;
// as text or, with --json, as one JSON object.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "class_metrics.h"
#include "commands.h"
#include "data_source.h"
#include "pipeline.h"

namespace loom::catdog {

namespace {

// The model, its outputs checked batch by batch (one host sync each): a model whose outputs are
// not finite would otherwise score a plausible 50%, and one with another number of outputs than
// its classes need (outputs_for_classes) would be scored with the wrong loss. The loader
// delivers `set` in order, so the rows seen so far locate the image.
class FiniteOutputs : public nn::Module {
 public:
  FiniteOutputs(const nn::ModulePtr& model, const vision::ImageSet& set,
                const std::string& model_path, int64_t outputs, bool tta)
      : model_(register_module("model", model)),
        set_(set),
        model_path_(model_path),
        outputs_(outputs),
        tta_(tta) {}
  // With --tta, the image's and its mirror's outputs are both checked, then averaged
  // (train::flip_tta_mean).
  Tensor forward(const Tensor& input) override {
    Tensor outputs = checked(input);
    if (tta_) outputs = train::flip_tta_mean(outputs, checked(train::flip_horizontal(input)));
    seen_ += input.size(0);
    return outputs;
  }
  std::string type_name() const override { return "FiniteOutputs"; }

 private:
  Tensor checked(const Tensor& input) {
    Tensor outputs = model_->forward(input);
    LOOM_CHECK(outputs.dim() == 2 && outputs.size(1) == outputs_, model_path_,
               ": the model outputs ", shape_str(outputs.shape()), " for a batch of ",
               input.size(0), ", but its ", set_.classes().size(), " classes need [N, ", outputs_,
               "]");
    check_finite_outputs(outputs, model_path_, [&](int64_t row) { return set_.path(seen_ + row); });
    return outputs;
  }

  nn::ModulePtr model_;
  const vision::ImageSet& set_;
  std::string model_path_;
  int64_t outputs_;
  bool tta_;
  int64_t seen_ = 0;
};

}  // namespace

int run_evaluate(const EvaluateArgs& args) {
  const Device device = parse_device(args.device);
  const io::LoadedModel loaded = io::load_model(args.model, device);
  const io::Preprocessing& prep = loaded.preprocessing;
  check_model_classes(prep, args.model);
  check_input_size(loaded.model->spec_json(), prep, args.model);
  const std::optional<vision::DataSplit> split = vision::split_of(args.data);
  const std::string dir = split ? split->val_dir : args.data;
  vision::ImageSet set =
      vision::load_image_set(dir, prep, args.workers, on_bad_input(args.strict), &std::cout);
  LOOM_CHECK(set.classes() == prep.class_names, dir, ": its class folders ",
             class_list(set.classes()), " do not match the classes the model ", args.model,
             " was trained on ", class_list(prep.class_names));
  data::DataLoader loader(
      *set.images,
      eval_loader_options(prep, args.batch_size, device, args.workers, on_bad_input(args.strict)));
  const int64_t outputs = outputs_for_classes(prep.class_names.size());
  FiniteOutputs model(loaded.model, set, args.model, outputs, args.tta);
  const train::EvalResult r = train::evaluate(model, loss_for_outputs(outputs), loader);
  const std::vector<int64_t> counts = r.confusion.to_vector<int64_t>();
  const std::vector<std::string>& names = prep.class_names;
  const size_t k = names.size();
  const std::vector<ClassMetrics> per_class = class_metrics(counts, k);
  if (args.json) {
    nlohmann::ordered_json j;
    j["model"] = args.model;
    j["data"] = dir;
    j["samples"] = r.samples;
    j["tta"] = args.tta;
    j["accuracy"] = r.accuracy;
    j["loss"] = r.loss;
    j["classes"] = names;
    nlohmann::ordered_json matrix =
        nlohmann::ordered_json::array();  // rows true, columns predicted
    for (size_t i = 0; i < k; ++i) {
      matrix.push_back(std::vector<int64_t>(counts.begin() + i * k, counts.begin() + (i + 1) * k));
    }
    j["confusion_matrix"] = matrix;
    nlohmann::ordered_json classes = nlohmann::ordered_json::object();
    for (size_t c = 0; c < k; ++c) {
      classes[names[c]] = {{"precision", per_class[c].precision},
                           {"recall", per_class[c].recall},
                           {"f1", per_class[c].f1},
                           {"support", per_class[c].support}};
    }
    j["per_class"] = classes;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%s on %s: %lld images%s\naccuracy %.4f\nloss %.4f\n", args.model.c_str(),
              dir.c_str(), (long long)r.samples, args.tta ? " (flip TTA)" : "", r.accuracy, r.loss);
  std::printf("%12s %10s %10s %10s %10s\n", "", "precision", "recall", "f1", "support");
  for (size_t c = 0; c < k; ++c) {
    std::printf("%12s %10.4f %10.4f %10.4f %10lld\n", names[c].c_str(), per_class[c].precision,
                per_class[c].recall, per_class[c].f1, (long long)per_class[c].support);
  }
  std::printf("confusion matrix (rows: true, columns: predicted)\n%12s", "");
  for (const auto& name : names) std::printf(" %10s", name.c_str());
  std::printf("\n");
  for (size_t i = 0; i < k; ++i) {
    std::printf("%12s", names[i].c_str());
    for (size_t j = 0; j < k; ++j) std::printf(" %10lld", (long long)counts[i * k + j]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace loom::catdog
