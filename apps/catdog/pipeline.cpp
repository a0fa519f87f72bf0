// Shared pieces of loom-catdog's subcommands.
#include "pipeline.h"

#include <algorithm>

#include "commands.h"

namespace loom::catdog {

Device parse_device(const std::string& spec) {
  if (spec.empty()) return cuda_is_available() ? cuda_device(0) : kCPU;
  LOOM_CHECK(spec == "cpu" || spec == "cuda" || spec.rfind("cuda:", 0) == 0, "--device: expected "
             "cpu, cuda or cuda:N, got \"", spec, "\"");
  Device device(spec);
  if (device.is_cuda()) {
    LOOM_CHECK(built_with_cuda(), "--device ", spec, ": this loom-catdog was built without CUDA");
    LOOM_CHECK(device.index < cuda_device_count(), "--device ", spec, ": this machine has ",
               cuda_device_count(), " CUDA devices");
  }
  return device;
}

data::DecodeOptions decode_options(const io::Preprocessing& p) {
  data::DecodeOptions o;
  o.height = p.height;
  o.width = p.width;
  o.interpolation = p.interpolation;
  o.dct_scaling = false;
  return o;
}

ImageSet load_image_set(const std::string& dir, const io::Preprocessing& p, int threads) {
  data::ImageFolderOptions options;
  options.decode = decode_options(p);
  options.on_bad_input = data::OnBadInput::Throw;  // an empty class folder is a user mistake
  ImageSet set;
  set.folder = std::make_unique<data::ImageFolder>(dir, options);
  // A photograph that does not decode is left out with a warning line, as in a long run one bad
  // file should not cost the whole training.
  set.images = std::make_unique<data::InMemoryDataset>(*set.folder, std::max(threads, 1));
  LOOM_CHECK(set.images->size() > 0, dir, ": no image could be decoded");
  return set;
}

Subset::Subset(const data::Dataset& source, int64_t count, uint64_t seed) : source_(source) {
  LOOM_CHECK(count > 0, "--limit must be positive, got ", count);
  indices_ = data::permutation(source.size(), seed, 0);
  indices_.resize(static_cast<size_t>(std::min(count, source.size())));
}

data::AugmentOptions preprocessing_transform(const io::Preprocessing& p) {
  data::AugmentOptions o;
  o.rescale = p.rescale;
  o.mean = p.mean;
  o.std = p.std;
  return o;
}

data::DataLoaderOptions eval_loader_options(const io::Preprocessing& p, int64_t batch_size,
                                            Device device, int workers) {
  data::DataLoaderOptions o;
  o.batch_size = batch_size;
  o.shuffle = false;
  o.num_workers = workers;
  o.device = device;
  o.augment = preprocessing_transform(p);
  return o;
}

train::LossFn loss_for_outputs(int64_t outputs) {
  return outputs == 1 ? train::binary_cross_entropy_loss() : train::cross_entropy_loss();
}

}  // namespace loom::catdog
