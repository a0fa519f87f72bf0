// `loom-catdog predict`: one line per photograph, "dog 0.93" (a two-class model: the second
// class when p >= 0.5, else the first with 1 - p, as the seed prints; K classes: the most
// probable), with --top-k N the N most probable ("cat 0.71, dog 0.20, fox 0.09"), or a JSON
// list with --json. Folders are searched recursively; several images end with a summary line of
// counts per class, and every file that could not be read is named on stderr with the reason
// (exit status 1).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "output_paths.h"
#include "pipeline.h"

namespace loom::catdog {

namespace {

namespace fs = std::filesystem;

// The images named by `args`: a file as given (read or refused later), a folder's .jpg, .jpeg
// and .png files at any depth in sorted order. A folder that holds none, or cannot be
// listed, is added to `unreadable` with the reason.
std::vector<std::string> expand_inputs(
    const std::vector<std::string>& args,
    std::vector<std::pair<std::string, std::string>>& unreadable) {
  std::vector<std::string> paths;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      paths.push_back(arg);
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec),
        end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      if (it->is_regular_file(file_ec) &&
          data::is_image_file_name(it->path().filename().string())) {
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

// The classes of one image from the most probable down, each with its probability: the model's
// probabilities `probs` over `classes` names (K = classes outputs), or a binary head's single p
// as {1 - p, p}, the second class first when p >= 0.5 (the seed's rule, also at p = 0.5). Equal
// probabilities keep the classes' order, so that the first is argmax's choice.
std::vector<std::pair<size_t, double>> ranked_classes(const std::vector<float>& probs,
                                                      size_t classes,
                                                      const std::string& model_path) {
  std::vector<std::pair<size_t, double>> ranked;
  if (probs.size() == 1) {
    LOOM_CHECK(classes == 2, model_path, ": a one-output model needs 2 class names, it has ",
               classes);
    const double p = probs[0];
    ranked = {{1, p}, {0, 1.0 - p}};
    if (p < 0.5) std::swap(ranked[0], ranked[1]);
    return ranked;
  }
  LOOM_CHECK(probs.size() == classes, model_path, ": ", probs.size(), " outputs for ", classes,
             " class names");
  for (size_t c = 0; c < probs.size(); ++c) ranked.emplace_back(c, probs[c]);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return ranked;
}

// Refuses, before any image is read, a --top-k outside 1..K for the model's K classes.
void check_top_k(const PredictArgs& args, const std::vector<std::string>& classes) {
  if (!args.top_k) return;
  const int64_t k = static_cast<int64_t>(classes.size());
  LOOM_CHECK(*args.top_k >= 1 && *args.top_k <= k, "--top-k ", *args.top_k, ": expected 1 to ", k,
             ", the classes of ", args.model, " (", class_list(classes), ")");
}

}  // namespace

int run_predict(const PredictArgs& args) {
  LOOM_CHECK(!args.images.empty(), "predict: no image given");
  if (!args.dump.empty())
    check_output_path("--dump", args.dump);  // before the predictions, not after
  const Device device = parse_device(args.device);
  const io::LoadedModel loaded = io::load_model(args.model, device);
  const io::Preprocessing& prep = loaded.preprocessing;
  check_model_classes(prep, args.model);
  check_top_k(args, prep.class_names);
  check_input_size(loaded.model->spec_json(), prep, args.model);
  const data::DecodeOptions decode = prep.decode_options();  // the interpolation trained with
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
      if (reason.rfind(path + ": ", 0) == 0)
        reason.erase(0, path.size() + 2);  // the path is said once
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
    std::vector<std::pair<size_t, double>> ranked =
        ranked_classes(probs, prep.class_names.size(), args.model);
    const auto [best, confidence] = ranked.front();
    ranked.resize(static_cast<size_t>(args.top_k.value_or(1)));
    ++per_class[best];
    if (args.json) {
      nlohmann::ordered_json result = {{"image", path},
                                       {"class", prep.class_names[best]},
                                       {"probability", confidence},
                                       {"outputs", probs}};
      if (args.top_k) {
        nlohmann::ordered_json top = nlohmann::ordered_json::array();
        for (const auto& [c, prob] : ranked)
          top.push_back({{"class", prep.class_names[c]}, {"probability", prob}});
        result["top_k"] = top;
      }
      results.push_back(result);
    } else {  // "dog 0.93  PATH", or with --top-k 3 "cat 0.71, dog 0.20, fox 0.09  PATH"
      for (size_t i = 0; i < ranked.size(); ++i) {
        std::printf("%s%s %.2f", i ? ", " : "", prep.class_names[ranked[i].first].c_str(),
                    ranked[i].second);
      }
      std::printf("  %s\n", path.c_str());
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
