#pragma once
/// fathom-cli's communicator: MPI when the process was started by a launcher (mpirun,
/// mpiexec, srun) and the build has MPI (FATHOM_WITH_MPI), else one process. The only
/// code that knows MPI.
#include <memory>

#include "core/types/Comm.hpp"

namespace fathom::cli {

/// True when the environment says a launcher started this process as one of several
/// ranks (Open MPI, MPICH/PMI, PMIx, Slurm).
bool launched_as_ranks();

/// The communicator of this process: an MPI one when launched_as_ranks() and MPI is
/// built in (initialising MPI once; finalised at exit), else a LocalComm. Throws
/// std::runtime_error when launched as ranks by a build without MPI.
std::shared_ptr<Comm> process_comm();

/// Ends every rank at once after a failure on this one (MPI_Abort with `exit_code`);
/// returns normally in a single process.
void abort_all_ranks(int exit_code);

}  // namespace fathom::cli
