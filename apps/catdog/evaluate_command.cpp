// `loom-catdog evaluate`: a model file's accuracy, loss and confusion matrix on a folder of
// class folders (DIR/val, DIR/test_set, or DIR itself).
#include <cstdio>

#include "commands.h"
#include "data_source.h"
#include "pipeline.h"

namespace loom::catdog {

namespace {

// The model, its outputs checked batch by batch (one host sync each): a model whose outputs are
// not finite would otherwise score a plausible 50%. The loader delivers `set` in order, so the
// rows seen so far locate the image.
class FiniteOutputs : public nn::Module {
 public:
  FiniteOutputs(const nn::ModulePtr& model, const ImageSet& set, const std::string& model_path)
      : model_(register_module("model", model)), set_(set), model_path_(model_path) {}
  Tensor forward(const Tensor& input) override {
    Tensor outputs = model_->forward(input);
    check_finite_outputs(outputs, model_path_, [&](int64_t row) { return set_.path(seen_ + row); });
    seen_ += input.size(0);
    return outputs;
  }
  std::string type_name() const override { return "FiniteOutputs"; }

 private:
  nn::ModulePtr model_;
  const ImageSet& set_;
  std::string model_path_;
  int64_t seen_ = 0;
};

}  // namespace

int run_evaluate(const EvaluateArgs& args) {
  const Device device = parse_device(args.device);
  const io::LoadedModel loaded = io::load_model(args.model, device);
  const io::Preprocessing& prep = loaded.preprocessing;
  check_input_size(loaded.model->spec_json(), prep, args.model);
  const std::optional<DataSplit> split = split_of(args.data);
  const std::string dir = split ? split->val_dir : args.data;
  ImageSet set = load_image_set(dir, prep, args.workers, on_bad_input(args.strict));
  LOOM_CHECK(set.classes() == prep.class_names, dir, ": its class folders do not match the classes "
             "the model ", args.model, " was trained on");
  data::DataLoader loader(*set.images,
                          eval_loader_options(prep, args.batch_size, device, args.workers, on_bad_input(args.strict)));
  const int64_t outputs = prep.class_names.size() == 2 ? 1 : static_cast<int64_t>(prep.class_names.size());
  FiniteOutputs model(loaded.model, set, args.model);
  const train::EvalResult r = train::evaluate(model, loss_for_outputs(outputs), loader);
  std::printf("%s on %s: %lld images\naccuracy %.4f\nloss %.4f\nconfusion matrix (rows: true, columns: predicted)\n",
              args.model.c_str(), dir.c_str(), (long long)r.samples, r.accuracy, r.loss);
  const std::vector<int64_t> counts = r.confusion.to_vector<int64_t>();
  const size_t k = prep.class_names.size();
  std::printf("%12s", "");
  for (const auto& name : prep.class_names) std::printf(" %10s", name.c_str());
  std::printf("\n");
  for (size_t i = 0; i < k; ++i) {
    std::printf("%12s", prep.class_names[i].c_str());
    for (size_t j = 0; j < k; ++j) std::printf(" %10lld", (long long)counts[i * k + j]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace loom::catdog
