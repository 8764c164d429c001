#include "app/cli/mpi_comm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

#if FATHOM_WITH_MPI
// The C interface only (MPI::MPI_C): no C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace fathom::cli {

namespace {

int env_int(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::atoi(value) : 0;
}

#if FATHOM_WITH_MPI

void check(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

/// MPI_COMM_WORLD. Collectives move bytes only (broadcasts from each rank in turn, in
/// chunks below MPI's int counts); nothing is reduced by MPI.
class MpiComm final : public Comm {
public:
    MpiComm() {
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
        // The engine calls the communicator from its compute thread, one call at a time.
        if (provided < MPI_THREAD_SERIALIZED)
            throw std::runtime_error("the MPI library does not support MPI_THREAD_SERIALIZED");
        check(MPI_Comm_rank(MPI_COMM_WORLD, &m_rank), "MPI_Comm_rank");
        check(MPI_Comm_size(MPI_COMM_WORLD, &m_size), "MPI_Comm_size");
        // The ranks that share this node's memory, ordered by world rank.
        MPI_Comm node = MPI_COMM_NULL;
        check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
        check(MPI_Comm_rank(node, &m_node_rank), "MPI_Comm_rank");
        check(MPI_Comm_size(node, &m_node_size), "MPI_Comm_size");
        MPI_Comm_free(&node);
        std::atexit([] {
            int finalized = 0;
            MPI_Finalized(&finalized);
            if (!finalized) MPI_Finalize();
        });
    }
    int rank() const noexcept override { return m_rank; }
    int size() const noexcept override { return m_size; }
    int node_rank() const noexcept override { return m_node_rank; }
    int node_size() const noexcept override { return m_node_size; }

    std::vector<Bytes> all_gather(std::span<const std::byte> local) override {
        std::vector<Bytes> out(static_cast<std::size_t>(m_size));
        for (int root = 0; root < m_size; ++root) out[static_cast<std::size_t>(root)] = broadcast(local, root);
        return out;
    }

    Bytes broadcast(std::span<const std::byte> bytes, int root) override {
        std::int64_t size = root == m_rank ? static_cast<std::int64_t>(bytes.size()) : 0;
        check(MPI_Bcast(&size, 1, MPI_INT64_T, root, MPI_COMM_WORLD), "MPI_Bcast");
        Bytes out(static_cast<std::size_t>(size));
        if (root == m_rank) std::copy(bytes.begin(), bytes.end(), out.begin());
        for (std::int64_t offset = 0; offset < size; offset += k_chunk) {
            const int count = static_cast<int>(std::min(k_chunk, size - offset));
            check(MPI_Bcast(out.data() + offset, count, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
        }
        if (root == m_rank)
            m_sent += size * (m_size - 1);
        else
            m_received += size;
        return out;
    }
    void send(std::span<const std::byte> bytes, int destination) override {
        const auto size = static_cast<std::int64_t>(bytes.size());
        check(MPI_Send(&size, 1, MPI_INT64_T, destination, k_tag, MPI_COMM_WORLD), "MPI_Send");
        for (std::int64_t offset = 0; offset < size; offset += k_chunk) {
            const int count = static_cast<int>(std::min(k_chunk, size - offset));
            check(MPI_Send(bytes.data() + offset, count, MPI_BYTE, destination, k_tag, MPI_COMM_WORLD), "MPI_Send");
        }
        m_sent += size;
    }
    Bytes receive(int source) override {
        std::int64_t size = 0;
        check(MPI_Recv(&size, 1, MPI_INT64_T, source, k_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        Bytes out(static_cast<std::size_t>(size));
        for (std::int64_t offset = 0; offset < size; offset += k_chunk) {
            const int count = static_cast<int>(std::min(k_chunk, size - offset));
            check(MPI_Recv(out.data() + offset, count, MPI_BYTE, source, k_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        }
        m_received += size;
        return out;
    }
    std::int64_t bytes_sent() const noexcept override { return m_sent; }
    std::int64_t bytes_received() const noexcept override { return m_received; }
    std::string host() const override {
        char name[MPI_MAX_PROCESSOR_NAME] = {};
        int length = 0;
        MPI_Get_processor_name(name, &length);
        return std::string(name, static_cast<std::size_t>(length));
    }

private:
    static constexpr int k_tag = 7;
    static constexpr std::int64_t k_chunk = std::int64_t{1} << 30;  ///< below MPI's int counts
    int m_rank = 0;
    int m_size = 1;
    int m_node_rank = 0;
    int m_node_size = 1;
    std::int64_t m_sent = 0;
    std::int64_t m_received = 0;
};

#endif

std::shared_ptr<Comm>& the_comm() {
    static std::shared_ptr<Comm> comm;
    return comm;
}

}  // namespace

bool launched_as_ranks() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
        if (env_int(name) > 1) return true;
    // srun without an MPI plugin still sets these.
    return env_int("SLURM_NTASKS") > 1 && std::getenv("SLURM_PROCID") != nullptr;
}

std::shared_ptr<Comm> process_comm() {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    auto& comm = the_comm();
    if (comm) return comm;
#if FATHOM_WITH_MPI
    if (launched_as_ranks()) {
        comm = std::make_shared<MpiComm>();
        return comm;
    }
#else
    if (launched_as_ranks())
        throw std::runtime_error("started as one of several ranks, but this fathom-cli was built without MPI "
                                 "(FATHOM_WITH_MPI=OFF): install libopenmpi-dev and rebuild");
#endif
    comm = std::make_shared<LocalComm>();
    return comm;
}

void abort_all_ranks(int exit_code) {
#if FATHOM_WITH_MPI
    const auto& comm = the_comm();
    if (comm && comm->size() > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
#else
    (void)exit_code;
#endif
}

}  // namespace fathom::cli
