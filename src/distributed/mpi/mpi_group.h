// The MPI backend: a ProcessGroup of CPU tensors across the processes of an mpirun job, over
// its own duplicate of MPI_COMM_WORLD. Needs no MPI headers; a build without MPI throws.
#pragma once

#include "loom/distributed/process_group.h"

namespace loom::dist {

// Joins every process of MPI_COMM_WORLD in a new group (backend "mpi", rank and size those of
// MPI_COMM_WORLD, device CPU). Collective over the world: every rank calls it, in the same
// order, one thread at a time; several groups may exist at once, each with its own
// communicator and worker thread, and they never wait for each other.
//
// MPI is initialised on the first call (MPI_THREAD_SERIALIZED) unless the program has done
// so itself, with at least that level; loom then finalises it at exit, after stopping every
// group's worker. A program that initialised MPI itself finalises it itself, after its groups
// are gone. loom serialises its own MPI calls with one process-wide mutex, so under
// MPI_THREAD_SERIALIZED the program must not call MPI itself while loom's groups are alive.
//
// Collectives are MPI's non-blocking ones, polled by the group's worker thread: they never
// block a caller, and fail at the group's deadline. all_reduce and reduce_scatter take sum,
// avg (a sum, then divided by the world size), max and min on float32, float64, int64, int32
// and uint8 (integer sums wrap as in C). An abort (yours, a timeout, a mismatch found by
// GroupOptions::check_collectives) reaches the other ranks through a notice, so their pending
// collectives fail at once with the reason instead of at their deadline. A rank that dies or
// hangs without aborting is noticed by the others' deadlines; mpirun itself ends the job when
// a process is killed.
//
// MPI cannot cancel a collective a peer never joins: such a collective stays pending inside
// MPI, its tensors kept alive until the process exits, and its group can run no more
// collectives. The MPI world stays usable for new groups, and the process still exits and
// finalises normally. Throws, naming the cause, when the other ranks do not create their group
// within options.timeout.
GroupPtr make_mpi_group(const GroupOptions& options = {});

// This process is leaving its job with an error: when it exits, loom ends the MPI job with
// MPI_Abort (after a second for the other ranks to print their own errors) instead of
// finalising, since MPI_Finalize waits for ranks that may be frozen or waiting on this one.
// Does nothing when loom did not initialise MPI (or was built without it). run_in_job and a
// group destroyed while an exception leaves its rank call it.
void end_mpi_job_at_exit();

}  // namespace loom::dist
