// loom-catdog: train the cat/dog CNN on folders of photographs, evaluate a model file, and tell
// whether new photographs show a dog or a cat. Only flag parsing lives here (see commands.h).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "commands.h"
#include "flag_hints.h"
#include "recipe.h"
#include "version.h"

using namespace loom::catdog;

namespace {

// Range checks let NaN through (every comparison with it is false), and "--lr nan" then failed
// only after the data was loaded; this one runs before them and also names an infinity.
const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !std::isfinite(v))
        return text + " is not a finite number";
      return "";
    },
    "FINITE", "finite number");

// An output flag given as "" would otherwise mean its default (or fail when writing).
const CLI::Validator kNonEmpty(
    [](std::string& text) { return text.empty() ? "the path is empty" : ""; }, "PATH",
    "non-empty path");

// The long flags of `app` ("--epochs", ...), for flag_hints.
std::vector<std::string> long_flags(const CLI::App& app) {
  std::vector<std::string> flags;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
  }
  return flags;
}

// After CLI11's own message for a failed parse: for each unknown flag, the known flag of the
// subcommand given (or of the top level) nearest to it ("did you mean --epochs?").
void print_flag_hints(CLI::App& app, int argc, char** argv) {
  const std::vector<CLI::App*> given = app.get_subcommands();
  const CLI::App& where = given.empty() ? app : *given.front();
  std::vector<std::string> known = long_flags(where);
  if (&where != &app) {
    for (const std::string& f : long_flags(app)) known.push_back(f);  // --help, --version
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string command = given.empty() ? "loom-catdog" : "loom-catdog " + where.get_name();
  for (const std::string& hint : loom::catdog::flag_hints(args, known))
    std::fprintf(stderr, "%s: %s\n", command.c_str(), hint.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "loom-catdog: the seed's cat/dog classifier (train, evaluate, predict, and import of "
      "PyTorch weights)"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", [] { return version_text(); },
      "loom's version, the git commit and the CUDA, cuDNN and NCCL it was built with");

  TrainArgs t;
  auto* train = app.add_subcommand("train", "train a model on DIR/train and DIR/val");
  train->add_option("--data", t.data,
                    "folder with train/ and val/ (or training_set/ and test_set/); "
                    "default: $LOOM_DATA_DIR, ../shared/data/cats_dogs, ./data/cats_dogs");
  train
      ->add_option("--recipe", t.recipe,
                   "seed (the seed program's settings) or fast (resnet18 with a stride-2 stem "
                   "at 96 px, batch 128 with --drop-last, validation batch 128, lr 0.002, AdamW "
                   "0.05, 30 epochs, cosine after a 1-epoch warm-up, label smoothing 0.1, flip "
                   "TTA; on CUDA bf16 and channels-last): the flags you give win over the "
                   "recipe's")
      ->check(CLI::IsMember({"seed", "fast"}))
      ->capture_default_str();
  train->add_option("--model", t.model, "seed_cnn, classic_cnn or resnet18")
      ->check(CLI::IsMember({"seed_cnn", "classic_cnn", "resnet18"}))
      ->capture_default_str();
  train->add_option("--epochs", t.epochs)
      ->check(CLI::Range(int64_t{1}, int64_t{10000}))
      ->capture_default_str();
  train->add_option("--batch-size", t.batch_size)
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->capture_default_str();
  train
      ->add_option("--val-batch-size", t.val_batch_size,
                   "images per validation batch, per rank (the metrics do not depend on it)")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->capture_default_str();
  train
      ->add_option("--validation-freq", t.validation_freq,
                   "validate every N epochs (Keras' validation_freq) and after the last")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}))
      ->capture_default_str();
  train
      ->add_option("--validation-from", t.validation_from,
                   "the first epoch (from 1) to validate after: the epochs before it have no "
                   "val_ metrics, and the best model is chosen from the later ones")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}))
      ->capture_default_str();
  train->add_flag("--drop-last", t.drop_last,
                  "leave out each epoch's last short training batch (one step shape)");
  train->add_option("--lr", t.lr, "Adam's learning rate")
      ->check(kFinite)
      ->check(CLI::Range(1e-9, 10.0))
      ->capture_default_str();
  train->add_option("--image-size", t.image_size)
      ->check(CLI::Range(int64_t{8}, int64_t{1024}))
      ->capture_default_str();
  train
      ->add_option("--stem-stride", t.stem_stride,
                   "resnet18's first convolution's stride: 2 halves the image there, a quarter "
                   "of the work")
      ->check(CLI::Range(int64_t{1}, int64_t{4}))
      ->capture_default_str();
  train
      ->add_option(
          "--init", t.init,
          "weight initialisers: keras (Glorot uniform, zero bias) or pytorch "
          "(Kaiming uniform); default keras for seed_cnn/classic_cnn, pytorch for resnet18")
      ->check(CLI::IsMember({"keras", "pytorch"}));
  train
      ->add_option(
          "--augment", t.augment,
          "the seed's shear 0.2, zoom 0.2 and flip as PyTorch's RandomAffine does them "
          "(torchvision: one zoom for both axes, zero fill, nearest sampling) or as Keras' "
          "ImageDataGenerator does (keras); strong (keras + rotation 15 deg, shifts 0.1) or none")
      ->check(CLI::IsMember({"keras", "torchvision", "strong", "none"}))
      ->capture_default_str();
  train
      ->add_option(
          "--resize", t.resize,
          "how photographs are resized to the input size (PIL's filters): "
          "bilinear (antialiased, as torchvision's Resize in the accuracy figures' reference), "
          "nearest (exactly Keras' load_img) or area; recorded in the model file")
      ->check(CLI::IsMember({"nearest", "bilinear", "area"}))
      ->capture_default_str();
  train
      ->add_option("--weight-decay", t.weight_decay,
                   "0: Adam; W > 0: AdamW with decoupled weight decay W")
      ->check(kFinite)
      ->check(CLI::Range(0.0, 1e3))
      ->capture_default_str();
  train
      ->add_option("--lr-schedule", t.lr_schedule,
                   "constant or cosine (per epoch, to 0 at the end; with --warmup-epochs W: a "
                   "linear warm-up over W epochs, then the cosine over the rest, step by step); "
                   "default: cosine for resnet18, constant otherwise")
      ->check(CLI::IsMember({"constant", "cosine"}));
  train->add_flag("--reduce-lr-on-plateau", t.reduce_lr_on_plateau,
                  "multiply the learning rate by --plateau-factor after --plateau-patience "
                  "epochs without a lower validation loss (Keras' ReduceLROnPlateau; with "
                  "--lr-schedule constant)");
  train
      ->add_option("--plateau-patience", t.plateau_patience,
                   "with --reduce-lr-on-plateau: epochs without improvement before a reduction")
      ->check(CLI::Range(int64_t{0}, int64_t{10000}))
      ->capture_default_str();
  train
      ->add_option("--plateau-factor", t.plateau_factor,
                   "with --reduce-lr-on-plateau: what each reduction multiplies the rate by")
      ->check(kFinite)
      ->check(CLI::Range(1e-6, 0.999999))
      ->capture_default_str();
  train
      ->add_option("--label-smoothing", t.label_smoothing,
                   "train towards targets smoothed by S (Keras' and PyTorch's definitions: "
                   "y(1 - S) + S/2 for two classes, S spread over the classes otherwise); the "
                   "losses shown are the smoothed ones")
      ->check(kFinite)
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  train
      ->add_option("--clip-grad-norm", t.clip_grad_norm,
                   "clip the gradients to this global L2 norm before each step (0: off)")
      ->check(kFinite)
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  train->add_option("--device", t.device, "cpu, cuda or cuda:N (default: cuda when available)");
  train
      ->add_option("--seed", t.seed,
                   "seeds the weights, the shuffling, the augmentation and --limit's subset: "
                   "the same seed and flags train the same model")
      ->capture_default_str();
  train->add_option("--out", t.out, "the model file (of the best or the last epoch: --save)")
      ->check(kNonEmpty)
      ->capture_default_str();
  train
      ->add_option("--save", t.save,
                   "which epoch's weights --out holds: best (the highest validation "
                   "accuracy, the earliest of equals; written whenever it improves) or last")
      ->check(CLI::IsMember({"best", "last"}))
      ->capture_default_str();
  train
      ->add_option("--early-stopping", t.early_stopping,
                   "stop after PATIENCE epochs in a row without a "
                   "better validation accuracy (0: off)")
      ->check(CLI::Range(int64_t{0}, int64_t{10000}))
      ->capture_default_str();
  train
      ->add_option("--min-delta", t.min_delta,
                   "with --early-stopping: the validation accuracy must beat "
                   "the best by more than this to count as better")
      ->check(kFinite)
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  train->add_option("--resume", t.resume,
                    "a checkpoint to continue from, or 'auto': this run's own checkpoint when it "
                    "exists (a requeued job), else a fresh start");
  train->add_option("--workers", t.workers, "data loader threads")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  train->add_option("--checkpoint", t.checkpoint, "checkpoint path (default: <out>.ckpt)")
      ->check(kNonEmpty);
  train
      ->add_option("--checkpoint-every-steps", t.checkpoint_every_steps,
                   "also checkpoint every N steps")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  train
      ->add_option("--tensorboard", t.tensorboard,
                   "also write TensorBoard event files into DIR (made when missing)")
      ->check(kNonEmpty);
  train->add_option("--metrics", t.metrics, "metrics CSV (default: <out stem>.metrics.csv)")
      ->check(kNonEmpty);
  train->add_option("--limit", t.limit, "train on N images only (a seeded subset)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  train->add_flag("--deterministic", t.deterministic, "deterministic GPU algorithms");
  train
      ->add_option("--graph", t.graph,
                   "capture each training step into a CUDA graph: auto (one CUDA rank), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  train
      ->add_option("--augment-on", t.augment_on,
                   "where augmentation runs: auto (the GPU on CUDA), cpu, gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))
      ->capture_default_str();
  train
      ->add_option("--pipeline", t.pipeline,
                   "cut the model into N stages (model parallelism): one GPU "
                   "each when there are N, else all on the run's device, each on its own stream")
      ->check(CLI::Range(0, 64));
  train
      ->add_option(
          "--micro-batches", t.micro_batches,
          "with --pipeline: micro-batches per batch (default: 4, or the batch when smaller)")
      ->check(CLI::Range(1, 1 << 20));
  train->add_option("--pipeline-schedule", t.pipeline_schedule, "with --pipeline: gpipe or 1f1b")
      ->check(CLI::IsMember({"gpipe", "1f1b"}))
      ->capture_default_str();
  train->add_flag("--conv-benchmark", t.conv_benchmark,
                  "choose cuDNN's convolution algorithms by timing them");
  train
      ->add_option(
          "--precision", t.precision,
          "fp32; tf32 (convolutions on TF32 tensor cores); bf16 (mixed "
          "precision on CUDA: convolutions and matrix products in bfloat16, float32 weights). "
          "The CPU computes in fp32 (the header says so) and refuses bf16")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  train->add_flag(
      "--channels-last", t.channels_last,
      "lay the images and the convolution weights out "
      "channels-last (NHWC): on CUDA the convolutions, batch norm, pooling and activations then "
      "run NHWC (faster for classic_cnn and resnet18)");
  train->add_flag("--tta", t.tta,
                  "validate with horizontal-flip test-time augmentation: each image's "
                  "probabilities averaged with its mirror's");
  train->add_flag("--summary", t.summary,
                  "print the model's layers, output shapes and parameter counts "
                  "(as Keras' model.summary()) before training");
  train->add_flag("--print-losses", t.print_losses,
                  "print every step's loss, over all ranks (syncs each step)");
  train->add_flag("--strict", t.strict,
                  "any image that does not decode is an error (default: left out, "
                  "with a warning naming it)");
  // Unchecked here: run_train names a bad value (--world-size 0) with the flags it conflicts with.
  int gpus = 0, world_size = 0;
  auto* gpus_flag =
      train->add_option("--gpus", gpus, "train on N GPUs, one thread per GPU (cuda:0..N-1, NCCL)");
  auto* world_flag =
      train->add_option("--world-size", world_size,
                        "train as N ranks (threads of this "
                        "process on --device; under mpirun/srun/torchrun: the job's size)");
  train
      ->add_option("--backend", t.backend,
                   "auto, threads, nccl, mpi or tcp (threads: several ranks may "
                   "share one GPU; mpi, tcp: processes started by a launcher)")
      ->capture_default_str();
  train->add_option("--dist-timeout", t.dist_timeout,
                    "seconds a collective may wait for the other ranks before the job fails "
                    "(default: $LOOM_DIST_TIMEOUT, else 600)");
  train
      ->add_option("--scale-lr", t.scale_lr,
                   "off, or linear: --lr times the world size (the global "
                   "batch is world size x --batch-size), after a linear warmup")
      ->check(CLI::IsMember({"off", "linear"}))
      ->capture_default_str();
  // Unchecked here: set, it also warms up a one-rank cosine run (lr_plan.h).
  int64_t warmup_epochs = 0;
  auto* warmup_flag =
      train
          ->add_option("--warmup-epochs", warmup_epochs,
                       "epochs of a linear warm-up: the --scale-lr linear one (default 5), or "
                       "with --lr-schedule cosine the warm-up before the cosine decay")
          ->check(CLI::Range(int64_t{0}, int64_t{10000}));

  EvaluateArgs e;
  auto* evaluate = app.add_subcommand("evaluate",
                                      "accuracy, loss, per-class precision, recall and F1, "
                                      "and the confusion matrix of a model file");
  evaluate->add_option("--model", e.model, "a model file written by train")->required();
  evaluate
      ->add_option("--data", e.data, "DIR with val/ (or test_set/), or a folder of class folders")
      ->required();
  evaluate->add_option("--device", e.device, "cpu, cuda or cuda:N");
  evaluate->add_option("--batch-size", e.batch_size)->check(CLI::Range(int64_t{1}, int64_t{65536}));
  evaluate->add_option("--workers", e.workers)->check(CLI::Range(0, 256));
  evaluate->add_flag("--strict", e.strict,
                     "any image that does not decode is an error (default: left out)");
  evaluate->add_flag("--tta", e.tta,
                     "horizontal-flip test-time augmentation: each image's probabilities "
                     "averaged with its mirror's");
  evaluate->add_flag("--json", e.json,
                     "print one JSON object: accuracy, loss, samples, classes, the "
                     "confusion matrix and per-class precision, recall, F1 and support");

  PredictArgs p;
  auto* predict =
      app.add_subcommand("predict",
                         "\"dog 0.93\" or \"cat 0.88\" (the most probable class and its "
                         "probability) for each image");
  predict->add_option("--model", p.model, "a model file written by train")->required();
  predict
      ->add_option(
          "images", p.images,
          "JPEG or PNG files, and folders (searched recursively); several "
          "images end with a line of counts per class; unreadable files are named on stderr "
          "and make the exit status 1")
      ->required();
  predict->add_option("--device", p.device, "cpu, cuda or cuda:N");
  predict->add_flag("--json", p.json, "print a JSON list");
  // Unchecked here: run_predict names the range, which the model's classes set.
  int64_t top_k = 0;
  auto* top_k_flag =
      predict->add_option("--top-k", top_k,
                          "print the N most probable classes of each image "
                          "with their probabilities (N from 1 to the model's number of "
                          "classes; a two-class model's are p and 1 - p)");
  predict
      ->add_option("--dump", p.dump,
                   "also save inputs and outputs as safetensors (tools/compare_torch.py)")
      ->check(kNonEmpty);

  ImportArgs im;
  auto* import = app.add_subcommand("import",
                                    "make a loom model file of a PyTorch state_dict saved with "
                                    "safetensors (same architecture: seed_cnn, classic_cnn or "
                                    "resnet18; 1 logit or K)");
  import->add_option("--model", im.model, "seed_cnn, classic_cnn or resnet18")
      ->capture_default_str();
  import
      ->add_option("--weights", im.weights, "safetensors.torch.save_file(model.state_dict(), FILE)")
      ->required();
  import->add_option("--out", im.out, "the model file to write")
      ->capture_default_str()
      ->check(kNonEmpty);
  import
      ->add_option("--classes", im.classes,
                   "class names, label 0 first: two for a 1-logit head, K for K logits")
      ->delimiter(',');
  import
      ->add_option("--image-size", im.image_size,
                   "input side: 64 (seed_cnn, classic_cnn) or 8 to 1024 (resnet18)")
      ->capture_default_str();
  import
      ->add_option("--mean", im.mean,
                   "torchvision's Normalize mean after ToTensor, R,G,B (with --std)")
      ->delimiter(',')
      ->check(kFinite);
  import->add_option("--std", im.std, "torchvision's Normalize std, R,G,B (with --mean)")
      ->delimiter(',')
      ->check(kFinite);
  import
      ->add_option("--resize", im.resize,
                   "how predict and evaluate resize photographs to the input size")
      ->check(CLI::IsMember({"nearest", "bilinear", "area"}))
      ->capture_default_str();
  import->footer(
      "Example:\n  python3 -c \"...; safetensors.torch.save_file(model.state_dict(), "
      "'seed.safetensors')\"\n"
      "  loom-catdog import --model seed_cnn --weights seed.safetensors --out "
      "seed.loom.safetensors\n"
      "  loom-catdog predict --model seed.loom.safetensors photo.jpg\n"
      "  loom-catdog import --model resnet18 --weights r.safetensors --classes cat,dog,fox "
      "--mean 0.485,0.456,0.406 --std 0.229,0.224,0.225");

  ExportArgs ex;
  auto* exporter =
      app.add_subcommand("export", "write a model file as an ONNX graph (opset 17, batch free)");
  exporter->add_option("--model", ex.model, "a model file written by train or import")->required();
  exporter->add_option("--onnx", ex.onnx, "the .onnx file to write")->required()->check(kNonEmpty);
  exporter->add_flag("--probabilities", ex.probabilities,
                     "end in the sigmoid (1 logit) or softmax predict applies; default: logits");
  exporter->footer("Example:\n  loom-catdog export --model catdog.safetensors --onnx catdog.onnx");

  train->footer(
      "Examples:\n"
      "  loom-catdog train                                  # the seed's recipe on "
      "../shared/data/cats_dogs\n"
      "  loom-catdog train --data DIR --epochs 50 --early-stopping 5 --tensorboard runs/\n"
      "  loom-catdog train --model resnet18 --gpus 4        # four GPUs, DistributedDataParallel\n"
      "  loom-catdog train --device cpu --world-size 2      # two ranks on the CPU\n"
      "  loom-catdog train --pipeline 2 --micro-batches 8   # the model cut into two stages\n"
      "  loom-catdog train --resume catdog.safetensors.ckpt # continue a stopped run\n"
      "  loom-catdog train --lr-schedule cosine --warmup-epochs 2 --label-smoothing 0.1 "
      "--clip-grad-norm 1.0\n"
      "  loom-catdog train --reduce-lr-on-plateau --plateau-patience 2");
  evaluate->footer(
      "Examples:\n"
      "  loom-catdog evaluate --model catdog.safetensors --data ../shared/data/cats_dogs\n"
      "  loom-catdog evaluate --model catdog.safetensors --data DIR/val --json > report.json");
  predict->footer(
      "Examples:\n"
      "  loom-catdog predict --model catdog.safetensors photo.jpg       # \"dog 0.93  photo.jpg\"\n"
      "  loom-catdog predict --model catdog.safetensors photos/ --json  # every image below "
      "photos/\n"
      "  loom-catdog predict --model classes.safetensors --top-k 3 a.png");

  app.footer(
      "Examples:\n"
      "  loom-catdog train --data DIR --epochs 10            # train on DIR/train, validate on "
      "DIR/val\n"
      "  loom-catdog evaluate --model catdog.safetensors --data DIR\n"
      "  loom-catdog predict --model catdog.safetensors photo.jpg photos/\n"
      "  loom-catdog import --model seed_cnn --weights seed.safetensors --out "
      "seed.loom.safetensors\n"
      "  loom-catdog train --help                            # every flag of a subcommand\n");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    // Any failure (arguments not expected, but also "--model is required" when it was mistyped).
    if (e.get_exit_code() != 0) print_flag_hints(app, argc, argv);
    return status;
  }
  // The recipe's flags the user gave keep their values (recipe.h).
  for (const std::string& flag : recipe_flags())
    if (train->get_option("--" + flag)->count() > 0) t.given.insert(flag);
  if (warmup_flag->count() > 0) {
    t.warmup_epochs = warmup_epochs;
    t.warmup_given = true;
  }
  if (gpus_flag->count() > 0) t.gpus = gpus;
  if (world_flag->count() > 0) t.world_size = world_size;
  if (top_k_flag->count() > 0) p.top_k = top_k;
  try {
    if (*train) return run_train(t);
    if (*evaluate) return run_evaluate(e);
    if (*import) return run_import(im);
    if (*exporter) return run_export(ex);
    return run_predict(p);
  } catch (const std::exception& err) {
    std::fflush(stdout);
    std::fprintf(stderr, "loom-catdog: error: %s\n", err.what());
    return 1;
  }
}
