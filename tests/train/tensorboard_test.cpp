// TensorBoardLogger: the event file read back by a minimal TFRecord + protobuf reader written
// here (its own bitwise CRC-32C), against the History; folder errors before training; CRC-32C.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// --- an independent reader -----------------------------------------------------------------

// CRC-32C one bit at a time (the library's uses a table).
uint32_t bitwise_crc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

uint64_t little_endian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= uint64_t(static_cast<unsigned char>(bytes.at(at + i))) << (8 * i);
  return v;
}

// The records of a TFRecord file, each CRC checked.
std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size()) << "truncated header at " << at;
    const uint64_t length = little_endian(file, at, 8);
    EXPECT_EQ(little_endian(file, at + 8, 4), masked(bitwise_crc32c(file.substr(at, 8))))
        << "length CRC at " << at;
    EXPECT_LE(at + 12 + length + 4, file.size()) << "truncated record at " << at;
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(little_endian(file, at + 12 + length, 4), masked(bitwise_crc32c(data)))
        << "data CRC at " << at;
    records.push_back(data);
    at += 12 + length + 4;
  }
  return records;
}

struct Field {
  uint64_t number = 0;  // raw value of a varint, fixed32 or fixed64 field
  std::string bytes;    // a length-delimited field
};
using Message = std::multimap<uint32_t, Field>;

uint64_t read_varint(const std::string& s, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<unsigned char>(s.at(at++));
    v |= uint64_t(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
}

Message parse(const std::string& s) {
  Message m;
  size_t at = 0;
  while (at < s.size()) {
    const uint64_t key = read_varint(s, at);
    Field f;
    switch (key & 7) {
      case 0:
        f.number = read_varint(s, at);
        break;
      case 1:
        f.number = little_endian(s, at, 8), at += 8;
        break;
      case 5:
        f.number = little_endian(s, at, 4), at += 4;
        break;
      case 2: {
        const uint64_t n = read_varint(s, at);
        f.bytes = s.substr(at, n);
        EXPECT_LE(at + n, s.size());
        at += n;
        break;
      }
      default:
        ADD_FAILURE() << "wire type " << (key & 7);
        return m;
    }
    m.emplace(static_cast<uint32_t>(key >> 3), f);
  }
  return m;
}

const Field& one(const Message& m, uint32_t field) {
  EXPECT_EQ(m.count(field), 1u) << "field " << field;
  static const Field missing;
  const auto it = m.find(field);
  return it == m.end() ? missing : it->second;
}

double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

float as_float(uint64_t bits) {
  const auto b = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// One decoded Event (each holding at most one Summary.Value, as the logger writes).
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::string tag;
  bool has_scalar = false;
  float scalar = 0;
  std::string plugin;                // Summary.Value.metadata.plugin_data.plugin_name
  int64_t dtype = -1;                // of Summary.Value.tensor
  size_t shape_dims = 99;            // its tensor_shape's dims
  std::vector<std::string> strings;  // its string_val
};

Event decode(const std::string& record) {
  const Message e = parse(record);
  Event out;
  out.wall_time = as_double(one(e, 1).number);
  if (e.count(2)) out.step = static_cast<int64_t>(one(e, 2).number);
  if (e.count(3)) out.file_version = one(e, 3).bytes;
  if (!e.count(5)) return out;
  const Message summary = parse(one(e, 5).bytes);
  const Message value = parse(one(summary, 1).bytes);
  out.tag = one(value, 1).bytes;
  if (value.count(2)) {
    out.has_scalar = true;
    out.scalar = as_float(one(value, 2).number);
  }
  if (value.count(9)) {
    const Message plugin_data = parse(one(parse(one(value, 9).bytes), 1).bytes);
    out.plugin = one(plugin_data, 1).bytes;
  }
  if (value.count(8)) {
    const Message tensor = parse(one(value, 8).bytes);
    out.dtype = static_cast<int64_t>(one(tensor, 1).number);
    out.shape_dims = parse(one(tensor, 2).bytes).count(2);
    const auto [begin, end] = tensor.equal_range(8);
    for (auto it = begin; it != end; ++it) out.strings.push_back(it->second.bytes);
  }
  return out;
}

// --- the tests -------------------------------------------------------------------------------

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().string());
  return files;
}

// Records each logged step's batch loss, and while training runs reads the event file that
// the logger (which comes before it) has flushed at the epoch's end.
class Probe : public train::Callback {
 public:
  Probe(const train::TensorBoardLogger& logger, int64_t every) : logger_(logger), every_(every) {}
  void on_batch_end(train::TrainContext& ctx) override {
    if (ctx.global_step % every_ == 0)
      batch_losses[ctx.global_step] = static_cast<float>(ctx.batch_loss.item<double>());
  }
  void on_epoch_end(train::TrainContext& ctx, const train::EpochMetrics& /*metrics*/) override {
    std::vector<std::string> tags;
    for (const std::string& path : {logger_.path(), logger_.validation_path()}) {
      for (const std::string& r : read_records(path)) {
        const Event e = decode(r);
        if (e.step == ctx.epoch + 1 && e.has_scalar && e.tag != "batch_loss")
          tags.push_back((path == logger_.path() ? "train/" : "validation/") + e.tag);
      }
    }
    tags_seen_during_training.push_back(tags);
  }
  std::map<int64_t, float> batch_losses;
  std::vector<std::vector<std::string>> tags_seen_during_training;

 private:
  const train::TensorBoardLogger& logger_;
  int64_t every_;
};

TEST(Crc32c, KnownAnswerAndMask) {
  const std::string check = "123456789";
  EXPECT_EQ(train::crc32c(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(bitwise_crc32c(check), 0xE3069283u);
  EXPECT_EQ(train::crc32c(check.data() + 4, 5, train::crc32c(check.data(), 4)), 0xE3069283u);
  EXPECT_EQ(train::crc32c("", 0), 0u);
  const std::string zeros(32, '\0');  // RFC 3720 B.4: 32 bytes of zeros
  EXPECT_EQ(train::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(train::masked_crc32c(check.data(), check.size()), masked(0xE3069283u));
}

TEST(TensorBoardLogger, EventFileHoldsTheHistory) {
  manual_seed(11);
  testing::HalvesDataset train_set(32, 1), val_set(16, 2);
  auto model = testing::tiny_model(2);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  data::DataLoader val_loader(val_set, testing::loader_options(16, false));
  const std::string dir = testing::temp_dir("loom_tb", "fit");
  train::TensorBoardOptions tb;
  tb.dir = dir;
  tb.batch_every = 3;
  tb.input_shape = {3, 8, 8};
  auto logger = std::make_shared<train::TensorBoardLogger>(tb);
  auto probe = std::make_shared<Probe>(*logger, 3);
  train::FitOptions fit;
  fit.epochs = 3;
  fit.out = nullptr;
  fit.callbacks = {logger, probe};
  const double before = train::wall_time_now();
  const train::History h = train::fit(*model, train::binary_cross_entropy_loss(), optimizer,
                                      train_loader, &val_loader, fit);
  const double after = train::wall_time_now();
  ASSERT_EQ(h.epochs.size(), 3u);

  // Keras' layout: a train and a validation run, the same tag in both.
  std::vector<std::string> runs = event_files(dir);
  std::sort(runs.begin(), runs.end());
  ASSERT_EQ(runs, (std::vector<std::string>{dir + "/train", dir + "/validation"}));
  const std::vector<std::string> files = event_files(dir + "/train");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], logger->path());
  ASSERT_EQ(event_files(dir + "/validation"), std::vector<std::string>{logger->validation_path()});
  const std::regex name(R"(events\.out\.tfevents\.\d{10}\..+\.)" + std::to_string(::getpid()) +
                        R"(\.\d+)");
  EXPECT_TRUE(std::regex_match(fs::path(files[0]).filename().string(), name)) << files[0];

  std::vector<Event> events;
  for (const std::string& r : read_records(files[0])) events.push_back(decode(r));
  // file_version, the summary, 4 batch losses (steps 3, 6, 9, 12), 3 epochs of loss, accuracy,
  // the learning rate and images/s.
  ASSERT_EQ(events.size(), 2u + 4u + 3u * 4u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_TRUE(events[0].tag.empty());
  double last_time = before;
  for (const Event& e : events) {
    EXPECT_GE(e.wall_time, last_time);
    last_time = e.wall_time;
  }
  EXPECT_LE(last_time, after);

  const Event& text = events[1];
  EXPECT_EQ(text.tag, "model_summary");
  EXPECT_EQ(text.step, 0);
  EXPECT_EQ(text.plugin, "text");
  EXPECT_EQ(text.dtype, 7);  // DT_STRING
  EXPECT_EQ(text.shape_dims, 0u);
  std::string expected_text;
  std::istringstream lines(model->summary({3, 8, 8}));
  for (std::string line; std::getline(lines, line);) expected_text += "    " + line + "\n";
  ASSERT_EQ(text.strings.size(), 1u);
  EXPECT_EQ(text.strings[0], expected_text);
  EXPECT_NE(expected_text.find("Conv2d"), std::string::npos) << expected_text;

  std::map<int64_t, float> batch_losses;
  std::map<std::pair<std::string, int64_t>, float> scalars;  // ("train/epoch_loss", epoch)
  for (size_t i = 2; i < events.size(); ++i) {
    const Event& e = events[i];
    ASSERT_TRUE(e.has_scalar) << e.tag;
    if (e.tag == "batch_loss") {
      batch_losses[e.step] = e.scalar;
    } else {
      EXPECT_TRUE(scalars.emplace(std::make_pair("train/" + e.tag, e.step), e.scalar).second)
          << e.tag << " twice";
    }
  }
  std::vector<Event> validation;
  for (const std::string& r : read_records(logger->validation_path()))
    validation.push_back(decode(r));
  ASSERT_EQ(validation.size(), 1u + 3u * 2u);
  EXPECT_EQ(validation[0].file_version, "brain.Event:2");
  for (size_t i = 1; i < validation.size(); ++i) {
    const Event& e = validation[i];
    ASSERT_TRUE(e.has_scalar) << e.tag;
    EXPECT_TRUE(scalars.emplace(std::make_pair("validation/" + e.tag, e.step), e.scalar).second)
        << e.tag << " twice";
  }
  EXPECT_EQ(batch_losses, probe->batch_losses);
  EXPECT_EQ(batch_losses.size(), 4u);
  EXPECT_EQ(scalars.size(), 3u * 6u);
  // History's names and where Keras puts them.
  const std::map<std::string, std::string> tag_of = {{"loss", "train/epoch_loss"},
                                                     {"accuracy", "train/epoch_accuracy"},
                                                     {"lr", "train/epoch_learning_rate"},
                                                     {"val_loss", "validation/epoch_loss"},
                                                     {"val_accuracy", "validation/epoch_accuracy"}};
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const int64_t step = epoch + 1;  // epochs counted from 1
    std::vector<std::string> expected;
    for (const auto& [m, tag] : tag_of) {
      EXPECT_EQ(scalars[std::make_pair(tag, step)], static_cast<float>(h.epochs[epoch].at(m)))
          << m << " epoch " << step;
      expected.push_back(tag);
    }
    const float rate = scalars[std::make_pair(std::string("train/epoch_images_per_second"), step)];
    EXPECT_TRUE(std::isfinite(rate) && rate > 0) << rate;
    // Readable while training: at its end each epoch's scalars were already in the files.
    std::vector<std::string> tags = probe->tags_seen_during_training.at(epoch);
    std::sort(tags.begin(), tags.end());
    expected.push_back("train/epoch_images_per_second");
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(tags, expected) << "epoch " << step;
  }

  // A second fit with the same logger writes a file of its own.
  fit.epochs = 1;
  fit.callbacks = {logger};
  train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader, nullptr, fit);
  EXPECT_EQ(event_files(dir + "/train").size(), 2u);
  EXPECT_NE(logger->path(), files[0]);
  EXPECT_TRUE(logger->validation_path().empty());  // no validation data this time
  fs::remove_all(dir);
}

class Trained : public train::Callback {
 public:
  void on_epoch_begin(train::TrainContext& /*ctx*/) override { started = true; }
  bool started = false;
};

TEST(TensorBoardLogger, BadFolderFailsBeforeTraining) {
  testing::HalvesDataset train_set(8, 1);
  auto model = testing::tiny_model(2);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoader loader(train_set, testing::loader_options(8, false));
  const std::string dir = testing::temp_dir("loom_tb", "bad");
  const auto fit_with = [&](const std::string& folder) {
    auto trained = std::make_shared<Trained>();
    train::FitOptions fit;
    fit.out = nullptr;
    fit.callbacks = {std::make_shared<train::TensorBoardLogger>(folder), trained};
    try {
      train::fit(*model, train::binary_cross_entropy_loss(), optimizer, loader, nullptr, fit);
    } catch (...) {
      EXPECT_FALSE(trained->started);
      throw;
    }
  };
  EXPECT_LOOM_ERROR(fit_with(dir + "/missing"), "log folder " + dir + "/missing does not exist");
  std::ofstream(dir + "/file") << "x";
  EXPECT_LOOM_ERROR(fit_with(dir + "/file"), "log folder " + dir + "/file is not a folder");
  // Unwritable: /proc refuses new files even to root; a folder without write permission
  // refuses them to anyone else.
  EXPECT_LOOM_ERROR(fit_with("/proc"), "cannot make the run folder /proc/train");
  if (::geteuid() != 0) {
    fs::create_directories(dir + "/locked/train");
    fs::permissions(dir + "/locked/train", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_LOOM_ERROR(fit_with(dir + "/locked"),
                      "cannot create the event file " + dir + "/locked/train/events.out");
    fs::permissions(dir + "/locked/train", fs::perms::owner_all);
    fs::permissions(dir + "/locked", fs::perms::owner_all);
  }
  EXPECT_LOOM_ERROR(train::TensorBoardLogger(""), "log folder is empty");
  train::TensorBoardOptions negative;
  negative.dir = dir;
  negative.batch_every = -1;
  EXPECT_LOOM_ERROR(train::TensorBoardLogger{negative}, "batch_every must be >= 0");
  fs::remove_all(dir);
}

TEST(TensorBoardLogger, OnlyRankZeroWrites) {
  testing::HalvesDataset train_set(8, 1);
  auto model = testing::tiny_model(2);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoader loader(train_set, testing::loader_options(8, false));
  train::History history;
  train::TrainContext ctx(*model, optimizer, loader, history);
  ctx.rank = 1;
  ctx.world_size = 2;
  const std::string dir = testing::temp_dir("loom_tb", "rank1");
  train::TensorBoardOptions tb;
  tb.dir = dir;
  tb.batch_every = 1;
  train::TensorBoardLogger logger(tb);
  logger.on_train_begin(ctx);
  logger.on_epoch_begin(ctx);
  ctx.global_step = ctx.step_in_epoch = 1;
  logger.on_batch_end(ctx);
  history.epochs.push_back({{"loss", 0.5}});
  logger.on_epoch_end(ctx, history.epochs.back());
  logger.on_train_end(ctx);
  EXPECT_TRUE(event_files(dir).empty());
  EXPECT_TRUE(logger.path().empty());
  train::TensorBoardLogger missing(dir + "/missing");
  missing.on_train_begin(ctx);  // rank 1 never opens a file, so its folder is never checked
  fs::remove_all(dir);
}

}  // namespace
}  // namespace loom
