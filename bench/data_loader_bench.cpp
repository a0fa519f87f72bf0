// Images per second of loom's DataLoader on a folder of photographs (the seed's pipeline:
// decode + 64x64 resize + Keras augmentation, batch 32) for several worker counts, and of the
// GPU-augmentation path from an in-memory uint8 cache. Reports like nccl-tests: '#' lines for the
// setup, one row per configuration, a #wrong column (batches with a bad shape or values outside
// [0, 1]), and JSON with --json.
//
//   images/s = images delivered / wall seconds, timed after `warmup` batches, and for a CUDA
//   device up to a synchronisation of the device after the last batch.
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using loom::data::Batch;
using loom::data::DataLoader;
using loom::data::DataLoaderOptions;

struct Row {
  std::string path;
  int threads = 0;
  int64_t batches = 0, images = 0, wrong = 0;
  double seconds = 0;
  double rate() const { return seconds > 0 ? images / seconds : 0; }
};

// Values of a batch outside [0, 1] (rescale 1/255, no normalisation) or a wrong shape.
bool batch_is_wrong(const Batch& b, int64_t size, bool check_values) {
  const auto& s = b.images.shape();
  if (s.size() != 4 || s[1] != 3 || s[2] != size || s[3] != size || b.labels.numel() != s[0])
    return true;
  if (!check_values) return false;
  for (float v : b.images.to_vector<float>()) {
    if (!(v >= 0.0f && v <= 1.0f)) return true;
  }
  return false;
}

Row measure(const std::string& path, const loom::data::Dataset& dataset, DataLoaderOptions options,
            int64_t max_batches, int64_t warmup, int64_t size) {
  DataLoader loader(dataset, options);
  Row row;
  row.path = path;
  row.threads = options.num_workers;
  loader.start_epoch(0);
  for (int64_t k = 0; k < warmup && loader.next(); ++k) {
  }
  const auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < max_batches; ++k) {
    auto b = loader.next();
    if (!b) break;
    ++row.batches;
    row.images += b->images.size(0);
    // Checking every value of every batch would dominate; check one batch in 50.
    if (batch_is_wrong(*b, size, row.batches % 50 == 1)) ++row.wrong;
  }
  if (options.device.is_cuda()) loom::cuda::synchronize(options.device.index);
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loom DataLoader throughput (images/s)"};
  std::string root = "../shared/data/cats_dogs/train";
  std::vector<int> threads = {1, 4, 16};
  int64_t size = 64, batch = 32, max_batches = 1000000, warmup = 5;
  std::string device = "cpu", interpolation = "bilinear";
  bool gpu_augment = true, json = false;
  uint64_t seed = 0;
  app.add_option("--root", root, "class folders of JPEGs (ImageFolder layout)");
  app.add_option("--threads", threads, "worker counts to measure")->delimiter(',');
  app.add_option("--size", size, "output height and width");
  app.add_option("--batch", batch, "batch size");
  app.add_option("--max-batches", max_batches,
                 "timed batches per row at most (default: one epoch)");
  app.add_option("--warmup", warmup, "untimed batches first");
  app.add_option("--device", device, "where batches go: cpu or cuda[:N]");
  app.add_option("--interpolation", interpolation,
                 "resize filter: nearest (Keras), bilinear (torchvision), area");
  app.add_flag("!--no-gpu-augment", gpu_augment, "skip the GPU-augmentation rows (CUDA only)");
  app.add_option("--seed", seed, "shuffling and augmentation seed");
  app.add_flag("--json", json, "print the rows as JSON");
  CLI11_PARSE(app, argc, argv);

  loom::data::ImageFolderOptions folder_options;
  folder_options.decode.height = folder_options.decode.width = size;
  folder_options.decode.interpolation =
      interpolation == "nearest" ? loom::data::Interpolation::Nearest
      : interpolation == "area"  ? loom::data::Interpolation::Area
                                 : loom::data::Interpolation::Bilinear;
  try {
    const loom::Device dev(device);
    loom::data::ImageFolder folder(root, folder_options);
    DataLoaderOptions options;
    options.batch_size = batch;
    options.seed = seed;
    options.augment = loom::data::AugmentOptions::keras_seed(seed);
    options.device = dev;

    std::printf("# loom data_loader_bench\n# root %s: %lld images, %zu classes\n", root.c_str(),
                static_cast<long long>(folder.size()), folder.classes().size());
    std::printf(
        "# decode: libjpeg-turbo with DCT scaling, resize %s to %lldx%lld; augmentation: "
        "rescale 1/255, shear 0.2 deg, zoom 0.8-1.2, horizontal flip; batch %lld\n",
        interpolation.c_str(), static_cast<long long>(size), static_cast<long long>(size),
        static_cast<long long>(batch));
    std::printf("# device %s, host threads available %u, CUDA devices %d\n", dev.str().c_str(),
                std::thread::hardware_concurrency(), loom::cuda_device_count());
    std::vector<Row> rows;
    for (int t : threads) {
      options.num_workers = t;
      rows.push_back(measure("decode+augment (cpu)", folder, options, max_batches, warmup, size));
    }
    if (dev.is_cuda() && gpu_augment) {
      const auto start = std::chrono::steady_clock::now();
      loom::data::InMemoryDataset cache(folder,
                                        static_cast<int>(std::thread::hardware_concurrency()));
      const double cache_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("# in-memory uint8 cache: %lld images decoded in %.2f s\n",
                  static_cast<long long>(cache.size()), cache_s);
      options.augment_on_device = true;
      for (int t : threads) {
        options.num_workers = t;
        // Several passes over the cache make a long enough measurement.
        Row total;
        for (int pass = 0; pass < 5; ++pass) {
          Row r = measure("memory cache, gpu augment", cache, options, max_batches, warmup, size);
          total.path = r.path, total.threads = r.threads;
          total.batches += r.batches, total.images += r.images, total.wrong += r.wrong;
          total.seconds += r.seconds;
        }
        rows.push_back(total);
      }
    }
    if (json) {
      std::printf("[\n");
      for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::printf(
            "  {\"path\": \"%s\", \"threads\": %d, \"batches\": %lld, \"images\": %lld, "
            "\"seconds\": %.4f, \"images_per_s\": %.1f, \"wrong\": %lld}%s\n",
            r.path.c_str(), r.threads, static_cast<long long>(r.batches),
            static_cast<long long>(r.images), r.seconds, r.rate(), static_cast<long long>(r.wrong),
            i + 1 < rows.size() ? "," : "");
      }
      std::printf("]\n");
    } else {
      std::printf("#\n# %-28s %8s %8s %9s %9s %12s %7s\n", "path", "threads", "batches", "images",
                  "seconds", "images/s", "#wrong");
      for (const Row& r : rows) {
        std::printf("  %-28s %8d %8lld %9lld %9.3f %12.1f %7lld\n", r.path.c_str(), r.threads,
                    static_cast<long long>(r.batches), static_cast<long long>(r.images), r.seconds,
                    r.rate(), static_cast<long long>(r.wrong));
      }
    }
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "data_loader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
