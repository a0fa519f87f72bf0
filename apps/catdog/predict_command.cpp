// `loom-catdog predict`: one line per photograph, "dog 0.93" (the class with p >= 0.5, else
// the other with 1 - p, as the seed prints), or a JSON list with --json.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "commands.h"
#include "output_paths.h"
#include "pipeline.h"

namespace loom::catdog {

int run_predict(const PredictArgs& args) {
  LOOM_CHECK(!args.images.empty(), "predict: no image given");
  if (!args.dump.empty()) check_output_path("--dump", args.dump);  // before the predictions, not after
  const Device device = parse_device(args.device);
  const io::LoadedModel loaded = io::load_model(args.model, device);
  const io::Preprocessing& prep = loaded.preprocessing;
  LOOM_CHECK(!prep.class_names.empty(), args.model, ": its preprocessing names no classes");
  check_input_size(loaded.model->spec_json(), prep, args.model);
  const data::DecodeOptions decode = decode_options(prep);  // the interpolation trained with
  const data::AugmentOptions transform = preprocessing_transform(prep);
  const data::SampleTransform identity;

  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  std::vector<Tensor> inputs, outputs;
  for (const std::string& path : args.images) {
    Tensor image = data::load_image(path, decode);  // throws naming the file when unreadable
    if (prep.channels == 1) image = mean(image.to(kFloat32), {2}, true).to(kUInt8);
    const Tensor x = data::augment_image(image, identity, transform).unsqueeze(0).to(device);
    const Tensor p = nn::predict(*loaded.model, x).cpu();
    check_finite_outputs(p, args.model, [&](int64_t) { return path; });
    const std::vector<float> probs = p.to_vector<float>();
    if (!args.dump.empty()) {
      inputs.push_back(x.cpu());
      outputs.push_back(p);
    }
    size_t best = 0;
    double confidence = 0.0;
    if (probs.size() == 1) {
      LOOM_CHECK(prep.class_names.size() == 2, args.model, ": a one-output model needs 2 class names");
      best = probs[0] >= 0.5f ? 1 : 0;
      confidence = best == 1 ? probs[0] : 1.0 - probs[0];
    } else {
      LOOM_CHECK(probs.size() == prep.class_names.size(), args.model, ": ", probs.size(),
                 " outputs for ", prep.class_names.size(), " class names");
      for (size_t c = 1; c < probs.size(); ++c) best = probs[c] > probs[best] ? c : best;
      confidence = probs[best];
    }
    if (args.json) {
      results.push_back({{"image", path}, {"class", prep.class_names[best]}, {"probability", confidence},
                         {"outputs", probs}});
    } else {
      std::printf("%s %.2f  %s\n", prep.class_names[best].c_str(), confidence, path.c_str());
    }
  }
  if (args.json) std::cout << results.dump(2) << "\n";
  if (!args.dump.empty()) io::save_safetensors(args.dump, {{"inputs", cat(inputs)}, {"outputs", cat(outputs)}});
  return 0;
}

}  // namespace loom::catdog
