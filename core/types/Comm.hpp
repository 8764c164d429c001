#pragma once
/// The communicator between the processes (ranks) of one run. The engine never sums
/// across ranks here: it moves bytes (gather, broadcast) and combines per-shard
/// partials itself in global shard order, so results do not depend on the number of
/// ranks. A run without a launcher is one rank (LocalComm); app/cli's MPI
/// implementation is the only code that knows MPI.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fathom {

/// Bytes exchanged between ranks.
using Bytes = std::vector<std::byte>;

class Comm {
public:
    virtual ~Comm() = default;
    /// This process's rank in [0, size()).
    virtual int rank() const noexcept = 0;
    virtual int size() const noexcept = 0;
    /// Every rank passes its bytes; every rank receives all of them, in rank order.
    /// Collective: every rank must call it, in the same order.
    virtual std::vector<Bytes> all_gather(std::span<const std::byte> local) = 0;
    /// Rank `root`'s bytes on every rank (collective).
    virtual Bytes broadcast(std::span<const std::byte> bytes, int root) = 0;
    /// Point to point, in order between a pair of ranks: `send` returns once the bytes
    /// are on their way to `destination`; `receive` waits for the next message from
    /// `source`.
    virtual void send(std::span<const std::byte> bytes, int destination) = 0;
    virtual Bytes receive(int source) = 0;
    /// Bytes this process has sent and received through the communicator so far.
    virtual std::int64_t bytes_sent() const noexcept = 0;
    virtual std::int64_t bytes_received() const noexcept = 0;
    /// Host name of this rank (reports).
    virtual std::string host() const = 0;
    /// This rank's index among the ranks on its node (that share its memory), and their
    /// number: the node-local rank that decides which of the node's GPUs are this rank's.
    virtual int node_rank() const noexcept = 0;
    virtual int node_size() const noexcept = 0;
};

/// One process: all_gather and broadcast return the caller's own bytes.
class LocalComm final : public Comm {
public:
    int rank() const noexcept override { return 0; }
    int size() const noexcept override { return 1; }
    std::vector<Bytes> all_gather(std::span<const std::byte> local) override;
    Bytes broadcast(std::span<const std::byte> bytes, int root) override;
    /// One process has no peer: both throw std::logic_error.
    void send(std::span<const std::byte> bytes, int destination) override;
    Bytes receive(int source) override;
    std::int64_t bytes_sent() const noexcept override { return 0; }
    std::int64_t bytes_received() const noexcept override { return 0; }
    std::string host() const override;
    int node_rank() const noexcept override { return 0; }
    int node_size() const noexcept override { return 1; }
};

/// Appends trivially copyable values and vectors of them to a byte buffer.
class ByteWriter {
public:
    template <typename T>
    void put(const T& value) {
        const auto* first = reinterpret_cast<const std::byte*>(&value);
        m_bytes.insert(m_bytes.end(), first, first + sizeof(T));
    }
    template <typename T>
    void put_vector(std::span<const T> values) {
        put(static_cast<std::uint64_t>(values.size()));
        const auto* first = reinterpret_cast<const std::byte*>(values.data());
        m_bytes.insert(m_bytes.end(), first, first + values.size() * sizeof(T));
    }
    const Bytes& bytes() const noexcept { return m_bytes; }

private:
    Bytes m_bytes;
};

/// Reads what a ByteWriter wrote, in the same order; throws std::runtime_error when the
/// buffer is shorter than what is read.
class ByteReader {
public:
    explicit ByteReader(std::span<const std::byte> bytes) : m_bytes(bytes) {}
    template <typename T>
    T get() {
        T value;
        copy(&value, sizeof(T));
        return value;
    }
    template <typename T>
    std::vector<T> get_vector() {
        const auto count = get<std::uint64_t>();
        if (count > (m_bytes.size() - m_offset) / (sizeof(T) ? sizeof(T) : 1)) fail();
        std::vector<T> values(static_cast<std::size_t>(count));
        copy(values.data(), values.size() * sizeof(T));
        return values;
    }
    bool done() const noexcept { return m_offset == m_bytes.size(); }

private:
    void copy(void* out, std::size_t size);
    [[noreturn]] static void fail();
    std::span<const std::byte> m_bytes;
    std::size_t m_offset = 0;
};

}  // namespace fathom
