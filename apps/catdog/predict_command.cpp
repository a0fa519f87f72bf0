// `loom-catdog predict`: one line per photograph, "dog 0.93" (the class with p >= 0.5, else
// the other with 1 - p, as the seed prints), or a JSON list with --json. Folders are searched
// recursively; several images end with a summary line of counts per class, and every file that
// could not be read is named on stderr with the reason (exit status 1).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "output_paths.h"
#include "pipeline.h"

namespace loom::catdog {

namespace {

namespace fs = std::filesystem;

// The images named by `args`: a file as given (read or refused later), a folder's .jpg, .jpeg
// and .png files at any depth in sorted order. A folder that holds none, or cannot be
// listed, is added to `unreadable` with the reason.
std::vector<std::string> expand_inputs(const std::vector<std::string>& args,
                                       std::vector<std::pair<std::string, std::string>>& unreadable) {
  std::vector<std::string> paths;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      paths.push_back(arg);
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      if (it->is_regular_file(file_ec) && data::is_image_file_name(it->path().filename().string())) {
        found.push_back(it->path().string());
      }
    }
    if (ec) {
      unreadable.emplace_back(arg, "cannot list the folder: " + ec.message());
    } else if (found.empty()) {
      unreadable.emplace_back(arg, "a folder without .jpg, .jpeg or .png files");
    }
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  return paths;
}

}  // namespace

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

  std::vector<std::pair<std::string, std::string>> unreadable;  // path, reason
  const std::vector<std::string> paths = expand_inputs(args.images, unreadable);
  for (const auto& [path, reason] : unreadable) {
    std::fprintf(stderr, "loom-catdog: cannot read %s: %s\n", path.c_str(), reason.c_str());
  }
  bool several = paths.size() > 1;
  for (const std::string& arg : args.images) several = several || fs::is_directory(arg);
  std::vector<int64_t> per_class(prep.class_names.size(), 0);

  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  std::vector<Tensor> inputs, outputs;
  for (const std::string& path : paths) {
    Tensor image;
    try {
      image = data::load_image(path, decode);
    } catch (const data::BadSample& bad) {  // missing, not a regular file, or does not decode
      std::string reason = bad.what();
      if (reason.rfind(path + ": ", 0) == 0) reason.erase(0, path.size() + 2);  // the path is said once
      std::fflush(stdout);
      std::fprintf(stderr, "loom-catdog: cannot read %s: %s\n", path.c_str(), reason.c_str());
      unreadable.emplace_back(path, reason);
      continue;
    }
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
    ++per_class[best];
    if (args.json) {
      results.push_back({{"image", path}, {"class", prep.class_names[best]}, {"probability", confidence},
                         {"outputs", probs}});
    } else {
      std::printf("%s %.2f  %s\n", prep.class_names[best].c_str(), confidence, path.c_str());
    }
  }
  if (args.json) std::cout << results.dump(2) << "\n";
  if (!args.json && several) {  // "5 images: cat 2, dog 3, 1 unreadable"
    int64_t predicted = 0;
    for (const int64_t n : per_class) predicted += n;
    std::printf("%lld images:", (long long)predicted);
    for (size_t c = 0; c < per_class.size(); ++c) {
      std::printf("%s %s %lld", c ? "," : "", prep.class_names[c].c_str(), (long long)per_class[c]);
    }
    if (!unreadable.empty()) std::printf(", %zu unreadable", unreadable.size());
    std::printf("\n");
  }
  if (!args.dump.empty() && !inputs.empty()) {
    io::save_safetensors(args.dump, {{"inputs", cat(inputs)}, {"outputs", cat(outputs)}});
  }
  return unreadable.empty() ? 0 : 1;
}

}  // namespace loom::catdog
