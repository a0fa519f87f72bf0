// Preemption as a normal event: SIGTERM (what Slurm and Kubernetes send first when they preempt
// or time out a job) and SIGUSR1 (Slurm's --signal, ahead of the time limit) only set a flag;
// fit reads it at step boundaries, agrees with the other ranks on the step to stop at, has the
// callbacks write a checkpoint there (Callback::on_preempted) and returns with
// History::preempted set. Nothing runs inside the handler but a store to a lock-free atomic.
#pragma once

#include <signal.h>

namespace loom::train {

// While it lives, SIGTERM and SIGUSR1 set the flag instead of ending the process (process-wide
// handlers); its destructor puts the previous handlers back, so that a program whose training
// is over ends on SIGTERM as before (loom-scaling runs loom-catdog's training and then goes on).
// A program makes one around training when it wants preemption to checkpoint instead of
// killing the process. Not nested across threads.
class PreemptionScope {
 public:
  PreemptionScope();
  ~PreemptionScope();
  PreemptionScope(const PreemptionScope&) = delete;
  PreemptionScope& operator=(const PreemptionScope&) = delete;

 private:
  struct sigaction previous_[2]{};  // SIGTERM's, SIGUSR1's
};
// The signal that asked this process to stop (SIGTERM or SIGUSR1), or 0. Async-signal-safe.
int preemption_signal();
// Forgets a request (a test, or a program that trains again after a preempted fit).
void clear_preemption();
// As a handler would: marks `signal` as received (tests, or a program's own stop condition).
void request_preemption(int signal);

// The exit status of a preempted program: 128 + SIGTERM, as a shell reports a process that
// SIGTERM ended, so that a scheduler sees a job that did not finish (Slurm requeues it with
// --requeue), while the job's own output says it checkpointed.
constexpr int kPreemptedExitStatus = 143;

}  // namespace loom::train
