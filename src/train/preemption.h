// Preemption as a normal event: SIGTERM (what Slurm and Kubernetes send first when they preempt
// or time out a job) and SIGUSR1 (Slurm's --signal, ahead of the time limit) only set a flag;
// fit reads it at step boundaries, agrees with the other ranks on the step to stop at, has the
// callbacks write a checkpoint there (Callback::on_preempted) and returns with
// History::preempted set. Nothing runs inside the handler but a store to a lock-free atomic.
#pragma once

namespace loom::train {

// Installs the handlers for SIGTERM and SIGUSR1 (process-wide; once is enough, again is
// harmless). A program calls it before training when it wants preemption to checkpoint instead
// of killing the process.
void install_preemption_handlers();
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
