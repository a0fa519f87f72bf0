// `loom-catdog export --onnx FILE --model MODEL`: a model file (of train or import) written as
// an ONNX graph (io/onnx_export.h: opset 17, the batch free, the input size the file's
// preprocessing records), with its class names and preprocessing in the ONNX metadata so that a
// runtime serving it can resize, scale and label as predict does.
#include <iostream>

#include "commands.h"
#include "output_paths.h"

namespace loom::catdog {

int run_export(const ExportArgs& args) {
  check_output_path("--onnx", args.onnx);  // before reading anything
  const io::LoadedModel loaded = io::load_model(args.model);
  const io::Preprocessing& prep = loaded.preprocessing;
  io::OnnxExportOptions options;
  options.probabilities = args.probabilities;
  std::string classes;
  for (const std::string& c : prep.class_names) classes += (classes.empty() ? "" : ",") + c;
  options.metadata = {{"loom.class_names", classes},
                      {"loom.preprocessing", prep.to_json()},
                      {"loom.exported_from", args.model}};
  const Shape example{prep.channels, prep.height, prep.width};
  io::export_onnx(*loaded.model, example, args.onnx, options);
  std::cout << "loom-catdog: exported " << args.model << " (" << loaded.model->num_parameters()
            << " parameters) to " << args.onnx << ": ONNX opset " << io::kOnnxOpset << ", input \""
            << options.input_name << "\" [N, " << prep.channels << ", " << prep.height << ", "
            << prep.width << "] float32 (RGB scaled to [0, 1]"
            << (prep.mean.empty() ? "" : ", then normalised") << "), output \""
            << options.output_name << "\" " << (args.probabilities ? "probabilities" : "logits")
            << " of " << prep.class_names.size() << " classes\n";
  return 0;
}

}  // namespace loom::catdog
