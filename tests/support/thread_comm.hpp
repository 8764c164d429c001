#pragma once
/// Ranks as threads of one test process: run_ranks(R, body) calls body(comm) on R
/// threads, each with a Comm of rank r in [0, R), so code written for a run over MPI
/// ranks is tested without a launcher. Messages are delivered in order per pair of
/// ranks, on separate channels for point-to-point and collective traffic (as MPI keeps
/// them apart).
#include <functional>

#include "core/types/Comm.hpp"

namespace fathom::test {

/// Runs body on `ranks` threads and joins them; rethrows the first exception (in rank
/// order) after every thread has ended. A throwing rank does not unblock the others:
/// bodies must fail on every rank alike, as collective code does.
void run_ranks(int ranks, const std::function<void(Comm&)>& body);

}  // namespace fathom::test
