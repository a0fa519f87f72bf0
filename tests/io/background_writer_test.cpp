// io::BackgroundWriter: files land in the order they were queued, with the bytes of the moment
// they were queued; a submit waits while the queue is full; a failed write is thrown, naming its
// file, from the next submit or flush, the writes queued behind it are not made, and the writer
// goes on; the destructor waits for every write and reports a failure without throwing.
#include "loom/io/background_writer.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "folder_test.h"
#include "loom/io/checkpoint.h"
#include "loom/io/model_file.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// A write that holds the worker until open(): what is queued behind it stays pending while
// the test acts. entered() waits until the worker is inside it. Declared after the writer, so
// that a failed assertion's early return opens it before the writer's destructor waits for it.
class Gate {
 public:
  ~Gate() { open(); }
  io::PreparedFile file(const std::string& path) {
    return io::PreparedFile(path, [entered = entered_, opened = opened_](const io::ByteSink& sink) {
      entered->set_value();
      opened.wait();
      sink("gate", 4);
    });
  }
  void entered() { entered_future_.wait(); }
  void open() {
    if (!is_open_.exchange(true)) open_.set_value();
  }

 private:
  std::shared_ptr<std::promise<void>> entered_ = std::make_shared<std::promise<void>>();
  std::future<void> entered_future_ = entered_->get_future();
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
  std::atomic<bool> is_open_{false};
};

// The message of the loom::Error `f` throws, or "(no error)".
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

class BackgroundWriter : public testing::FolderTest {
 protected:
  BackgroundWriter() : FolderTest("loom_bw_") {}
  // A path whose write fails: its folder is a regular file.
  std::string unwritable() const {
    const std::string plain = path("plain");
    io::write_file_atomically(io::PreparedFile(plain, "not a folder"));
    return plain + "/m.safetensors";
  }
  // Waits (with a deadline) until the worker has nothing left: a failure it met is recorded.
  static void wait_until_idle(const io::BackgroundWriter& writer) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::seconds(static_cast<int>(10 * testing::kSlowdown));
    while (writer.pending() != 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(writer.pending(), 0u) << "the writer is still busy after the deadline";
  }
};

TEST_F(BackgroundWriter, FilesLandInTheOrderQueuedWithTheirOwnBytes) {
  std::mutex mutex;
  std::vector<std::string> order;
  const auto recorded = [&](const std::string& name, const std::string& text) {
    return io::PreparedFile(path(name), [&mutex, &order, text](const io::ByteSink& sink) {
      {
        const std::lock_guard<std::mutex> lock(mutex);
        order.push_back(text);
      }
      sink(text.data(), text.size());
    });
  };
  io::BackgroundWriter writer(2);  // a small queue: most submits below wait for room
  std::vector<std::string> expected;
  const char* names[] = {"run.ckpt", "best.st", "metrics.csv"};
  for (int i = 0; i < 30; ++i) {
    const std::string text = std::string(names[i % 3]) + " " + std::to_string(i);
    writer.submit(recorded(names[i % 3], text));
    expected.push_back(text);
  }
  writer.flush();
  EXPECT_EQ(writer.pending(), 0u);
  EXPECT_EQ(order, expected);
  EXPECT_EQ(io::read_file(path("run.ckpt")), "run.ckpt 27");
  EXPECT_EQ(io::read_file(path("best.st")), "best.st 28");
  EXPECT_EQ(io::read_file(path("metrics.csv")), "metrics.csv 29");
  EXPECT_EQ(listing(),
            (std::vector<std::string>{"best.st", "metrics.csv", "run.ckpt"}));  // no litter
  EXPECT_LOOM_ERROR(io::BackgroundWriter(0), "max_pending must be at least 1");
}

TEST_F(BackgroundWriter, ASubmitWaitsWhileTheQueueIsFull) {
  io::BackgroundWriter writer(1);
  Gate gate;
  writer.submit(gate.file(path("gate")));
  gate.entered();                                   // the worker holds the gate's write
  writer.submit(io::PreparedFile(path("a"), "a"));  // the one pending write allowed
  std::atomic<bool> returned{false};
  std::thread third([&] {
    writer.submit(io::PreparedFile(path("b"), "b"));  // waits until the worker takes "a"
    returned = true;
  });
  // A correct writer keeps it waiting however long this takes; the pause only gives a wrong
  // one the time to show itself.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "submit returned while the queue was full";
  EXPECT_EQ(writer.pending(), 2u);
  gate.open();
  third.join();
  EXPECT_TRUE(returned.load());
  writer.flush();
  EXPECT_EQ(io::read_file(path("a")), "a");
  EXPECT_EQ(io::read_file(path("b")), "b");
}

TEST_F(BackgroundWriter, AFailedWriteIsThrownAtTheNextSubmitNamingItsFile) {
  const std::string bad = unwritable();
  io::BackgroundWriter writer;
  writer.submit(io::PreparedFile(bad, "lost"));
  wait_until_idle(writer);
  const std::string message =
      error_of([&] { writer.submit(io::PreparedFile(path("next"), "next")); });
  EXPECT_NE(message.find("cannot write " + bad), std::string::npos) << message;
  writer.flush();                          // thrown once: nothing more to report
  EXPECT_FALSE(fs::exists(path("next")));  // the refused submit queued nothing
  // And the writer goes on.
  writer.submit(io::PreparedFile(path("next"), "next"));
  writer.flush();
  EXPECT_EQ(io::read_file(path("next")), "next");
}

TEST_F(BackgroundWriter, AFailedWriteIsThrownByFlushAndTheWritesBehindItAreNotMade) {
  // The checkpoint's folder is removed before the worker reaches it; the best model file queued
  // after it must not land (it would be newer than the checkpoint on disk).
  fs::create_directories(dir_ / "gone");
  const std::string checkpoint = path("gone/run.ckpt");
  io::BackgroundWriter writer;
  Gate gate;
  writer.submit(gate.file(path("gate")));
  writer.submit(io::PreparedFile(checkpoint, "checkpoint"));
  writer.submit(io::PreparedFile(path("best.st"), "best"));
  fs::remove_all(dir_ / "gone");
  gate.open();
  const std::string message = error_of([&] { writer.flush(); });
  EXPECT_NE(message.find("cannot write " + checkpoint), std::string::npos) << message;
  EXPECT_NE(message.find("the 1 write queued after it was not made"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(path("best.st")));
  EXPECT_EQ(error_of([&] { writer.flush(); }), "(no error)");  // thrown once
  fs::create_directories(dir_ / "gone");
  writer.submit(io::PreparedFile(checkpoint, "checkpoint"));
  writer.submit(io::PreparedFile(path("best.st"), "best"));
  writer.flush();
  EXPECT_EQ(io::read_file(checkpoint), "checkpoint");
  EXPECT_EQ(io::read_file(path("best.st")), "best");
}

TEST_F(BackgroundWriter, AnErrorOfAnyKindNamesTheFile) {
  io::BackgroundWriter writer;
  writer.submit(io::PreparedFile(path("odd"), [](const io::ByteSink&) { throw std::bad_alloc(); }));
  const std::string message = error_of([&] { writer.flush(); });
  EXPECT_NE(message.find("writing " + path("odd") + " failed: std::bad_alloc"), std::string::npos)
      << message;
  EXPECT_EQ(listing(), std::vector<std::string>{});  // write_file_atomically's own cleanup
}

TEST_F(BackgroundWriter, TheDestructorWaitsForEveryWrite) {
  {
    io::BackgroundWriter writer(8);
    Gate gate;
    writer.submit(gate.file(path("gate")));
    gate.entered();
    for (int i = 0; i < 6; ++i)
      writer.submit(io::PreparedFile(path("f" + std::to_string(i)), std::to_string(i)));
    EXPECT_EQ(writer.pending(), 7u);
    gate.open();
  }
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(io::read_file(path("f" + std::to_string(i))), std::to_string(i));
  // A failure the destructor meets goes to stderr; nothing is thrown out of it.
  const std::string bad = unwritable();
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW({
    io::BackgroundWriter writer;
    writer.submit(io::PreparedFile(bad, "lost"));
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("loom: cannot write " + bad), std::string::npos) << err;
}

TEST_F(BackgroundWriter, AFileHoldsTheStateOfTheMomentItWasQueued) {
  Generator gen(5);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Linear>(3, 2, true, nn::Init::PyTorch, &gen));
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(0.1));
  const Tensor x = rand({4, 3}, kFloat32, &gen);
  const auto step = [&] {
    optimizer.zero_grad();
    sum(model->forward(x)).backward();
    optimizer.step();
  };
  step();  // Adam's moments exist
  std::map<std::string, std::vector<float>> weights, moments;
  for (const auto& [name, t] : model->state_dict()) weights[name] = t.to_vector<float>();
  for (const auto& [key, t] : optimizer.state_dict().tensors) moments[key] = t.to_vector<float>();
  ASSERT_FALSE(moments.empty());

  io::BackgroundWriter writer;
  Gate gate;
  writer.submit(gate.file(path("gate")));
  io::TrainingState state;
  state.global_step = 1;
  writer.submit(io::prepare_checkpoint(path("run.ckpt"), *model, optimizer, state));
  writer.submit(io::prepare_model_file(path("m.st"), *model, io::Preprocessing{}));
  step();  // training goes on while the files wait: weights and moments change
  {
    NoGradGuard no_grad;
    model->parameters().front().fill_(7.0);
  }
  gate.open();
  writer.flush();

  const io::Checkpoint ckpt = io::read_checkpoint(path("run.ckpt"));
  EXPECT_EQ(ckpt.state.global_step, 1);
  for (const auto& [name, values] : weights) {
    EXPECT_EQ(ckpt.file.at("model." + name).to_vector<float>(), values) << name;
  }
  for (const auto& [key, values] : moments)
    EXPECT_EQ(ckpt.file.at("optim." + key).to_vector<float>(), values) << key;
  const io::LoadedModel loaded = io::load_model(path("m.st"));
  for (const auto& [name, t] : loaded.model->state_dict())
    EXPECT_EQ(t.to_vector<float>(), weights.at(name)) << name;
  EXPECT_NE(model->state_dict().at("0.weight").to_vector<float>(),
            weights.at("0.weight"));  // it did change
}

}  // namespace
}  // namespace loom
