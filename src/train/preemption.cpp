// The preemption flag and its signal handlers (preemption.h).
#include "loom/train/preemption.h"

#include <signal.h>

#include <atomic>

#include "loom/tensor/error.h"

namespace loom::train {

namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler needs a lock-free flag");

void on_preemption_signal(int signal) { g_signal.store(signal); }

constexpr int kSignals[] = {SIGTERM, SIGUSR1};

}  // namespace

PreemptionScope::PreemptionScope() {
  struct sigaction action {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a read or write the signal interrupts goes on
  for (int i = 0; i < 2; ++i) {
    if (::sigaction(kSignals[i], &action, &previous_[i]) != 0) {
      for (int j = 0; j < i; ++j) ::sigaction(kSignals[j], &previous_[j], nullptr);
      LOOM_FAIL("PreemptionScope: sigaction(", kSignals[i], ") failed");
    }
  }
}

PreemptionScope::~PreemptionScope() {
  for (int i = 0; i < 2; ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
}

int preemption_signal() { return g_signal.load(std::memory_order_relaxed); }

void clear_preemption() { g_signal.store(0); }

void request_preemption(int signal) { g_signal.store(signal); }

}  // namespace loom::train
