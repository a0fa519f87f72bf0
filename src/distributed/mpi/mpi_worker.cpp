// The MPI group's worker thread: the communicator, the queue, and polling each collective.
#include "loom/distributed/mpi/mpi_worker.h"

#include <array>
#include <cstdio>

#include "loom/distributed/mpi/mpi_collective.h"

namespace loom::dist::mpi {

namespace {

// How often an idle worker looks for a peer's abort notice.
constexpr auto kIdlePoll = std::chrono::milliseconds(20);
// How long shutdown waits for a thread that is inside an MPI call before leaving it detached.
constexpr auto kJoinDeadline = std::chrono::seconds(10);

void keep_tensor(const Tensor& t) {
  if (t.defined()) keep_forever(t.impl());
}

// FNV-1a over what every rank's call must agree on, so that equal calls give equal numbers.
uint64_t fingerprint(const CollectiveInfo& info, const Tensor& input, const Tensor& output) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](int64_t v) {
    for (int byte = 0; byte < 8; ++byte) {
      h ^= static_cast<uint64_t>(v >> (8 * byte)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  const bool reduces = info.kind == OpKind::AllReduce || info.kind == OpKind::ReduceScatter;
  mix(static_cast<int64_t>(info.kind));
  mix(static_cast<int64_t>(info.sequence));
  mix(reduces ? static_cast<int64_t>(info.reduce) : -1);
  mix(info.kind == OpKind::Broadcast ? info.root : -1);
  mix(info.kind == OpKind::Barrier ? -1 : static_cast<int64_t>(info.dtype));
  mix(input.defined() ? input.numel() : -1);
  mix(output.defined() ? output.numel() : -1);
  return h;
}

}  // namespace

std::shared_ptr<Worker> Worker::start(int rank, int size, std::string who,
                                      std::chrono::milliseconds setup_timeout,
                                      AbortGroup abort_group) {
  std::shared_ptr<Worker> worker(
      new Worker(rank, size, std::move(who), setup_timeout, std::move(abort_group)));
  // The thread owns a reference so that a thread left detached (stuck inside MPI) never
  // touches a destroyed worker.
  worker->thread_ = std::thread([self = worker] { self->run(); });
  register_worker(worker);
  return worker;
}

Worker::Worker(int rank, int size, std::string who, std::chrono::milliseconds setup_timeout,
               AbortGroup abort_group)
    : rank_(rank),
      size_(size),
      who_(std::move(who)),
      setup_timeout_(setup_timeout),
      abort_group_(std::move(abort_group)) {}

Worker::~Worker() {
  // Only reached after shutdown() (joined or detached) or on the detached thread itself.
  if (thread_.joinable()) thread_.detach();
}

// --- the caller's side --------------------------------------------------------------------

void Worker::wait_ready() {
  std::unique_lock<std::mutex> lock(mutex_);
  // The thread times the duplication out itself; this bound only guards against a thread stuck
  // inside MPI.
  changed_.wait_until(lock, Clock::now() + setup_timeout_ + kJoinDeadline,
                      [&] { return setup_ != Setup::Pending; });
  if (setup_ == Setup::Ready) return;
  throw Error(detail::concat(
      "make_mpi_group: ", who_, ": ",
      setup_ == Setup::Failed ? setup_error_ : "the worker thread is stuck inside MPI_Comm_idup"));
}

void Worker::submit(Tensor input, Tensor output, WorkPtr work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_ && !stop_requested_) {
      queue_.push_back(Task{std::move(input), std::move(output), std::move(work)});
      changed_.notify_all();
      return;
    }
  }
  work->mark_failed(aborted_ ? abort_reason() : stop_reason());
}

void Worker::note_abort(const std::string& reason) {
  std::deque<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) {
      abort_reason_ = reason;
      aborted_ = true;
    }
    dropped.swap(queue_);
    changed_.notify_all();
  }
  for (const Task& t : dropped) t.work->mark_failed(reason);
}

void Worker::request_stop(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_requested_) return;
  stop_reason_ = reason;
  stop_requested_ = true;
  changed_.notify_all();
}

void Worker::request_exit_stop() { request_stop("the process is exiting"); }

bool Worker::wait_stopped(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_until(lock, deadline, [&] { return stopped_; });
}

void Worker::shutdown(const std::string& reason) {
  request_stop(reason);
  const bool stopped = wait_stopped(exit_gave_up() ? Clock::now() : Clock::now() + kJoinDeadline);
  {
    std::lock_guard<std::mutex> lock(callback_mutex_);
    abort_group_ = nullptr;
  }
  if (stopped) {
    thread_.join();
  } else {
    std::fprintf(stderr, "loom.dist: %s: the MPI worker thread is stuck inside MPI; leaving it\n",
                 who_.c_str());
    thread_.detach();
  }
}

std::string Worker::stop_reason() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_reason_;
}

std::string Worker::abort_reason() {
  std::lock_guard<std::mutex> lock(mutex_);
  return abort_reason_;
}

void Worker::abort_group(const std::string& reason) {
  std::lock_guard<std::mutex> lock(callback_mutex_);
  if (abort_group_) abort_group_(reason);
}

// --- the thread -----------------------------------------------------------------------------

void Worker::run() {
  if (set_up()) {
    for (;;) {
      std::optional<Task> task;
      bool stopping = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait_for(lock, kIdlePoll, [&] {
          return stop_requested_ || !queue_.empty() || (aborted_ && !notices_done_);
        });
        stopping = stop_requested_;
        if (!stopping && !queue_.empty()) {
          task = std::move(queue_.front());
          queue_.pop_front();
        }
      }
      // Before stopping too: a group aborted just before it is destroyed still tells its peers.
      service_notices();
      if (stopping) break;
      if (task) serve(*task);
    }
  }
  std::deque<Task> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(queue_);
  }
  for (const Task& t : left) t.work->mark_failed(stop_reason());
  clean_up();
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  changed_.notify_all();
}

bool Worker::set_up() {
  // MPI writes the new handle when the duplication completes, which may be after this worker
  // has given up on it: the handle lives on its own.
  auto comm = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    std::lock_guard<std::mutex> calls(call_mutex());
    LOOM_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, comm.get(), &request));
  } catch (const Error& e) {
    fail_setup(e.what());
    return false;
  }
  std::string error;
  const Outcome outcome = poll(&request, Clock::now() + setup_timeout_, false, error);
  if (outcome != Outcome::Done) {
    keep_forever(comm);
    if (outcome == Outcome::TimedOut) {
      fail_setup(detail::concat(
          "timed out after ", std::chrono::duration<double>(setup_timeout_).count(),
          " s (the group's timeout) waiting for the other ranks to create their group "
          "(MPI_Comm_idup of MPI_COMM_WORLD); every rank must call make_mpi_group, in the same "
          "order"));
    } else {
      fail_setup(outcome == Outcome::Failed ? error : stop_reason());
    }
    return false;
  }
  comm_ = *comm;
  try {
    std::lock_guard<std::mutex> calls(call_mutex());
    // Errors come back as codes that fail one work, instead of MPI aborting the process.
    LOOM_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    notices_.listen(comm_, size_);
  } catch (const Error& e) {
    fail_setup(e.what());
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  setup_ = Setup::Ready;
  changed_.notify_all();
  return true;
}

void Worker::fail_setup(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  setup_ = Setup::Failed;
  setup_error_ = message;
  changed_.notify_all();
}

void Worker::serve(const Task& task) {
  const CollectiveInfo& info = task.work->info();
  if (task.work->is_completed()) return;  // failed while queued: an abort or its timeout
  if (aborted_) {
    task.work->mark_failed(abort_reason());
    return;
  }
  if (!guard_matches(task)) return;
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    std::lock_guard<std::mutex> calls(call_mutex());
    request = issue(info, task.input, task.output, comm_);
  } catch (const Error& e) {
    // Nothing is pending in MPI, but the other ranks would wait for this rank: abort.
    abort_group(detail::concat(info.describe(), " could not start: ", e.what()));
    task.work->mark_failed(e.what());
    return;
  }
  if (!await(task, &request, nullptr)) return;
  try {
    finish(info, task.output, size_);
    task.work->mark_completed();
  } catch (const Error& e) {
    task.work->mark_failed(e.what());
  }
}

bool Worker::guard_matches(const Task& task) {
  // One 16-byte all-reduce (max of the fingerprint and of its complement, whose complement is
  // the minimum) before any rank hands MPI a buffer: ranks whose calls differ all learn it
  // from the same answer, where MPI would write past the smaller buffer or mix unrelated data.
  const CollectiveInfo& info = task.work->info();
  const uint64_t mine = fingerprint(info, task.input, task.output);
  auto guard = std::make_shared<std::array<uint64_t, 2>>(std::array<uint64_t, 2>{mine, ~mine});
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    std::lock_guard<std::mutex> calls(call_mutex());
    LOOM_MPI_CHECK(
        MPI_Iallreduce(MPI_IN_PLACE, guard->data(), 2, MPI_UINT64_T, MPI_MAX, comm_, &request));
  } catch (const Error& e) {
    abort_group(detail::concat(info.describe(), " could not start its check: ", e.what()));
    task.work->mark_failed(e.what());
    return false;
  }
  if (!await(task, &request, guard)) return false;
  const uint64_t highest = (*guard)[0], lowest = ~(*guard)[1];
  if (highest == lowest) return true;
  const std::string reason = detail::concat(
      "collectives differ across ranks: ", who_, " called ", info.describe(),
      " while another rank called a different collective, size or sequence number (nothing "
      "was sent; LOOM_DIST_CHECK=1 names every rank's call)");
  abort_group(reason);
  task.work->mark_failed(reason);
  return false;
}

bool Worker::await(const Task& task, MPI_Request* request, std::shared_ptr<const void> scratch) {
  const CollectiveInfo& info = task.work->info();
  std::string error;
  const Outcome outcome = poll(request, task.work->deadline(), true, error);
  if (outcome == Outcome::Done) return true;
  abandon(task);
  if (scratch) keep_forever(std::move(scratch));
  switch (outcome) {
    case Outcome::Failed: {
      const std::string reason = detail::concat(info.describe(), " failed in MPI: ", error);
      abort_group(reason);
      task.work->mark_failed(reason);
      break;
    }
    case Outcome::TimedOut: {
      const std::string reason = detail::concat(
          info.describe(), " timed out waiting for the other ranks (the group's timeout passed)");
      abort_group(reason);
      task.work->mark_failed(reason);
      break;
    }
    case Outcome::Aborted:
      task.work->mark_failed(abort_reason());
      break;
    case Outcome::Stopped:
      task.work->mark_failed(stop_reason());
      break;
    case Outcome::Done:
      break;
  }
  return false;
}

Worker::Outcome Worker::poll(MPI_Request* request, Clock::time_point deadline, bool listen,
                             std::string& error) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    int status = MPI_SUCCESS;
    std::optional<std::string> notice;
    {
      std::lock_guard<std::mutex> calls(call_mutex());
      status = MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (status == MPI_SUCCESS && !done && listen) notice = notices_.take();
    }
    if (status != MPI_SUCCESS) {
      error = detail::concat("MPI_Test: ", error_string(status));
      return Outcome::Failed;
    }
    if (done) return Outcome::Done;
    if (notice) {
      on_remote_abort(*notice);
      return Outcome::Aborted;
    }
    if (stop_requested_) return Outcome::Stopped;
    if (aborted_) return Outcome::Aborted;
    if (Clock::now() >= deadline) return Outcome::TimedOut;
    backoff.pause();
  }
}

void Worker::on_remote_abort(const std::string& reason) {
  notices_done_ = true;  // the peer that aborted has told every rank itself
  abort_group(reason);
  // The group may be going away (no callback any more): the worker gives up all the same.
  note_abort(reason);
}

void Worker::service_notices() {
  if (comm_ == MPI_COMM_NULL) return;
  if (!aborted_) {
    std::optional<std::string> notice;
    {
      std::lock_guard<std::mutex> calls(call_mutex());
      notice = notices_.take();
    }
    if (notice) on_remote_abort(*notice);
  }
  if (aborted_ && !notices_done_) {
    notices_done_ = true;
    AbortNotices::send(comm_, rank_, size_, abort_reason());
  }
}

void Worker::abandon(const Task& task) {
  // MPI forbids freeing or cancelling a collective's request: it stays pending, its handle
  // dropped, its buffers kept.
  keep_tensor(task.input);
  keep_tensor(task.output);
  abandoned_ = true;
}

void Worker::clean_up() {
  notices_.stop();
  // See the header: an aborted group's communicator is never freed.
  if (comm_ != MPI_COMM_NULL && !aborted_ && !abandoned_) {
    std::lock_guard<std::mutex> calls(call_mutex());
    MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

}  // namespace loom::dist::mpi
