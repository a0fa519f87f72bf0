// Model files: a safetensors file holding a model's weights (state_dict names, so PyTorch loads
// them as they are) and, in its metadata, the model's JSON spec and its preprocessing, so that
// load_model() rebuilds a working model with no code.
//   metadata: "format": "pt", "loom.kind": "model", "loom.format_version": "1",
//             "loom.spec": Module::spec_json(), "loom.preprocessing": Preprocessing::to_json()
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/data/decode.h"
#include "loom/data/resize.h"
#include "loom/io/atomic_file.h"
#include "loom/io/safetensors.h"
#include "loom/nn/module.h"

namespace loom::io {

inline constexpr const char* kFormatVersion = "1";
// The largest input height or width a file's preprocessing may ask for: a 4096 x 4096 x 3
// float image is 192 MiB (65536 x 65536 would be 48 GiB, from a 1 KB file).
inline constexpr int64_t kMaxInputSide = 4096;

// What an input goes through before the model sees it: resize to height x width with
// `interpolation`, channels, value * rescale, then (value - mean[c]) / std[c] when mean/std are
// given.
struct Preprocessing {
  int64_t height = 64;
  int64_t width = 64;
  // JSON "interpolation": "nearest" | "bilinear" | "area" (data::interpolation_name). Files
  // written before the field existed were all trained on nearest-resized inputs, so a missing
  // field reads as Nearest.
  data::Interpolation interpolation = data::Interpolation::Nearest;
  int64_t channels = 3;
  double rescale = 1.0 / 255.0;
  std::vector<std::string> class_names;  // label i is class_names[i]
  std::vector<double> mean;
  std::vector<double> std;

  // How a photograph becomes an input of this model: its size and interpolation, and a JPEG
  // decoded at full size as PIL does (no libjpeg DCT down-scaling, which would low-pass the image
  // before the resize), so that nearest gives exactly Keras' load_img and bilinear torchvision's
  // antialiased Resize. Training's loaders and serving (evaluate, predict) both take it from
  // here, so they cannot decode differently.
  data::DecodeOptions decode_options() const;

  std::string to_json() const;
  // Throws loom::Error naming `source` (a file) when the JSON is malformed (see
  // nn/untrusted_json.h) or out of range: height and width in [1, kMaxInputSide], 1 or 3
  // channels, a positive rescale, finite means, positive finite stds.
  static Preprocessing from_json(const std::string& json, const std::string& source);
};

// The interpolation whose data::interpolation_name is `name`, or nothing.
std::optional<data::Interpolation> interpolation_from_name(const std::string& name);

struct LoadedModel {
  nn::ModulePtr model;
  Preprocessing preprocessing;
  Metadata metadata;
};

// Writes the model's weights (on any device) and description atomically; `extra` adds the
// caller's own metadata entries (the description's own keys win).
void save_model(const std::string& path, const nn::Module& model,
                const Preprocessing& preprocessing, const Metadata& extra = {});
// The file save_model writes, not yet written: its bytes are made here, from the weights as
// they are now, so they may change while an io::BackgroundWriter writes it.
PreparedFile prepare_model_file(const std::string& path, const nn::Module& model,
                                const Preprocessing& preprocessing, const Metadata& extra = {});
// Rebuilds the model from the spec, loads its weights strictly and moves it to `device`. Also
// reads a checkpoint (io/checkpoint.h), which holds the same description. The spec is checked
// against the file's tensors (names, shapes, dtypes) before anything is built, and the
// preprocessing against the spec's input channels. A file that is not safetensors, not a loom
// model, or whose weights do not fit its spec throws loom::Error naming the file and the problem.
LoadedModel load_model(const std::string& path, Device device = kCPU);

namespace detail {
// The metadata that describes a model (spec, preprocessing, version) with the given kind.
Metadata model_metadata(const nn::Module& model, const Preprocessing& preprocessing,
                        const std::string& kind);
// Builds the module of file.metadata's spec and loads the tensors named prefix + state name.
nn::ModulePtr rebuild_model(const TensorFile& file, const std::string& prefix,
                            const std::string& path);
// The metadata value of `key`, or an error naming the file when it is absent.
const std::string& require_metadata(const Metadata& metadata, const std::string& key,
                                    const std::string& path);
// Throws "<context>: <problems>" unless `given` holds exactly the tensors of `expected`, each
// with its shape and dtype (a file's int32 tensor is refused, not converted into a float
// parameter). Names the first few problems and counts the rest.
void check_tensors_fit(const std::vector<nn::StateEntry>& expected, const nn::NamedTensors& given,
                       const std::string& context);
}  // namespace detail

}  // namespace loom::io
