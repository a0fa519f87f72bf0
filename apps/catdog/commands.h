// loom-catdog's subcommands as library functions (main.cpp only parses flags), so tests can
// call them and the binary stays thin. Each returns the process exit status; bad input throws
// loom::Error with one clear message, which main prints.
#pragma once

#include <loom/loom.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace loom::catdog {

// Data loader threads by default: half the cores, at least 2 and at most 8 (more only wait on
// the GPU: a batch's crops are a few hundred kilobytes).
inline int default_workers() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::min(8, std::max(2, cores / 2));
}

struct TrainArgs {
  // seed | fast: a preset of the flags below (recipe.h); the user's own flags (`given`) win.
  std::string recipe = "seed";
  std::set<std::string> given;  // the recipe_flags() given on the command line, without "--"
  std::string data;             // empty: search the default places (data_source.h)
  std::string model = "seed_cnn";
  int64_t epochs = 25;
  int64_t batch_size = 32;
  // Validation keeps no activations for a backward pass, so its batches can be larger than
  // training's: 8 batches of the 2,000 photographs instead of 32 took the default run's
  // validation from ~19 to ~8 ms of a ~50 ms epoch on the H200. The metrics are sums over the
  // samples, so they do not depend on it (Keras' validation_batch_size).
  int64_t val_batch_size = 256;
  // Which epochs validate (train::FitOptions): from validation_from on, every validation_freq-th,
  // and the last.
  int64_t validation_freq = 1;
  int64_t validation_from = 1;
  // Leave out each epoch's last short batch (the shuffle changes which images): every step then
  // has one shape, so one captured graph and one set of convolution algorithms serve them all.
  bool drop_last = false;
  double lr = 1e-3;
  int64_t image_size = 64;
  int64_t stem_stride = 1;  // resnet18's first convolution's stride (nn::resnet18)
  // torchvision | keras | strong | none. The seed's shear, zoom and flip as PyTorch's RandomAffine
  // does them train the seed CNN about half a point better than Keras' own semantics, and as
  // well as PyTorch does (docs/benchmarks.md).
  std::string augment = "torchvision";
  // nearest | bilinear | area (data::Interpolation). The accuracy figures' reference pipeline
  // (PyTorch + torchvision) resizes bilinearly; nearest is Keras' load_img default.
  std::string resize = "bilinear";
  double weight_decay = 0.0;  // 0: Adam; > 0: AdamW with this decoupled decay
  std::string init;  // keras | pytorch; empty: keras for seed_cnn/classic_cnn, pytorch for resnet18
  std::string lr_schedule;  // constant | cosine; empty: cosine for resnet18, else constant
  std::string device;       // empty: cuda when available, else cpu
  uint64_t seed = 0;
  std::string out = "catdog.safetensors";
  // best: --out holds the epoch of the highest validation accuracy (the earliest of equals),
  // rewritten whenever it improves; last: the last epoch's, written at the end (best_model.h).
  std::string save = "best";
  int64_t early_stopping = 0;  // stop after this many epochs without a better val_accuracy (0: off)
  double min_delta = 0.0;      // ... better by more than this
  std::string resume;          // a checkpoint to continue from
  std::string tensorboard;  // a folder for TensorBoard event files (made when missing); empty: none
  int workers = default_workers();  // data loader threads (decoding the folders uses every core)
  // On a single CUDA rank: capture each training step into a CUDA graph (train::CapturedStep).
  // auto: on for one CUDA rank, off on the CPU and with several ranks (DDP runs eagerly).
  std::string graph = "auto";  // auto | on | off
  // Where the training augmentation runs: auto (gpu on CUDA), cpu or gpu (uint8 images are
  // uploaded and warped on the device; the same per-pixel maths as the CPU's).
  std::string augment_on = "auto";
  bool conv_benchmark = false;  // choose cuDNN's algorithms by timing (loom::set_conv_benchmark)
  // fp32 | tf32 | bf16 (train/precision.h): bf16 trains with mixed precision on CUDA.
  std::string precision = "tf32";
  // Feed the images channels-last (train::FitOptions::channels_last): faster convolutions on
  // CUDA for classic_cnn and resnet18, not for seed_cnn.
  bool channels_last = false;
  std::string checkpoint;  // empty: <out>.ckpt
  int64_t checkpoint_every_steps = 0;
  std::string metrics;         // empty: <out>.metrics.csv (and .jsonl beside it)
  int64_t limit = 0;           // use only the first N training images (0: all)
  bool deterministic = false;  // deterministic GPU algorithms (resume within 1e-5 on the GPU)
  bool print_losses = false;   // one line per step: "step <global step> loss <hex float>"
  bool summary = false;        // print the Keras-style model summary before training
  // Any photograph that does not decode is an error; otherwise it is left out with a warning
  // (a class left without one decodable image is an error either way).
  bool strict = false;
  // Training over ranks (launch_plan.h): --gpus N, one thread per GPU over NCCL; --world-size
  // N, thread ranks on --device (or the job's size under mpirun, srun or a RANK launcher);
  // --backend auto|threads|nccl|mpi|tcp. Unset: one rank, or the launcher's job.
  std::optional<int> gpus;
  std::optional<int> world_size;
  std::string backend = "auto";
  // Seconds a collective may wait for the other ranks before the job fails (PyTorch's
  // init_process_group(timeout=)); empty: $LOOM_DIST_TIMEOUT, else 600.
  std::string dist_timeout;
  // off | linear: the learning rate times the world size (the global batch grows with it),
  // reached by a linear warmup over warmup_epochs (Goyal et al. 2017).
  std::string scale_lr = "off";
  int64_t warmup_epochs = 5;
  // --warmup-epochs was given: then a one-rank --lr-schedule cosine run warms up too
  // (optim::CosineWithWarmup); unset, only --scale-lr linear warms up (over the 5 above).
  bool warmup_given = false;
  // Keras' ReduceLROnPlateau on val_loss (optim::ReduceLROnPlateau): the rate times
  // plateau_factor after plateau_patience epochs without a lower validation loss.
  bool reduce_lr_on_plateau = false;
  int64_t plateau_patience = 3;
  double plateau_factor = 0.1;
  // Targets smoothed by this (0: off): nn::cross_entropy's label_smoothing, or y(1 - s) + s/2
  // for the one-logit head (Keras' BinaryCrossentropy(label_smoothing=s)).
  double label_smoothing = 0.0;
  // Horizontal-flip test-time augmentation in validation (train::FitOptions::flip_tta): each
  // image's probabilities averaged with its mirror's.
  bool tta = false;
  double clip_grad_norm = 0.0;  // clip gradients to this global norm before each step (0: off)
  // Model parallelism on one rank (dist::PipelineParallel): the model cut into this many stages
  // (0 or 1: not cut), over cuda:0..N-1 when the run is on CUDA and has that many GPUs, else all
  // on the run's device (each stage on its own stream); each batch cut into micro_batches, run
  // in the schedule's order: gpipe | 1f1b. Unset micro_batches: 4, or the batch when smaller
  // (pipeline_micro_batches).
  int pipeline = 0;
  std::optional<int> micro_batches;
  std::string pipeline_schedule = "gpipe";
  // A library caller's own callbacks (loom-scaling's time to accuracy), after loom-catdog's;
  // shared by every rank's fit (they see ctx.rank: act on rank 0 only).
  std::vector<train::CallbackPtr> callbacks;
};

struct EvaluateArgs {
  std::string model;
  std::string data;
  std::string device;
  int64_t batch_size = 64;
  int workers = default_workers();  // data loader and decoding threads
  // On a single CUDA rank: capture each training step into a CUDA graph (train::CapturedStep).
  // auto: on for one CUDA rank, off on the CPU and with several ranks (DDP runs eagerly).
  std::string graph = "auto";  // auto | on | off
  // Where the training augmentation runs: auto (gpu on CUDA), cpu or gpu (uint8 images are
  // uploaded and warped on the device; the same per-pixel maths as the CPU's).
  std::string augment_on = "auto";
  bool conv_benchmark = false;  // choose cuDNN's algorithms by timing (loom::set_conv_benchmark)
  bool strict = false;          // as TrainArgs::strict
  bool tta = false;             // as TrainArgs::tta
  bool json = false;  // one JSON object (accuracy, loss, samples, classes, matrix, per class)
                      // instead of text
};

struct PredictArgs {
  std::string model;
  // Files and folders (searched recursively for .jpg, .jpeg and .png, in sorted order).
  std::vector<std::string> images;
  std::string device;
  bool json = false;
  // Also the N most probable classes of each image, with their probabilities (1 <= N <= the
  // model's classes). A two-class model's single output p is the distribution {1 - p, p}.
  std::optional<int64_t> top_k;
  std::string dump;  // also write the preprocessed inputs and outputs (tools/compare_torch.py)
};

// `import`: a PyTorch state_dict in safetensors made into a model file (import_command.cpp).
struct ImportArgs {
  std::string model = "seed_cnn";
  std::string weights;  // safetensors.torch.save_file(model.state_dict(), ...)
  std::string out = "imported.safetensors";
  // Label 0 first; as many as the head has logits (two for a 1-logit sigmoid head).
  std::vector<std::string> classes{"cat", "dog"};
  std::string resize = "bilinear";
  int64_t image_size = 64;  // seed_cnn and classic_cnn: 64 only
  // torchvision's Normalize(mean, std) after ToTensor, one value per channel; empty: none.
  std::vector<double> mean, std;
};

// `export`: a model file written as ONNX (export_command.cpp, io/onnx_export.h).
struct ExportArgs {
  std::string model;           // a model file of train or import
  std::string onnx;            // the .onnx file to write
  bool probabilities = false;  // end in the sigmoid or softmax predict applies
};

// The micro-batches of a --pipeline run's batch: --micro-batches, else min(4, batch size).
inline int pipeline_micro_batches(const TrainArgs& a) {
  return a.micro_batches.value_or(static_cast<int>(std::min<int64_t>(4, a.batch_size)));
}

int run_train(const TrainArgs& args);
int run_import(const ImportArgs& args);
int run_export(const ExportArgs& args);
int run_evaluate(const EvaluateArgs& args);
int run_predict(const PredictArgs& args);

// "cpu", "cuda", "cuda:N", or empty for cuda when available; throws naming a bad spec.
Device parse_device(const std::string& spec);

}  // namespace loom::catdog
