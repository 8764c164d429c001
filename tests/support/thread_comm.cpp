#include "tests/support/thread_comm.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace fathom::test {

namespace {

/// Mailboxes of one group of ranks: a FIFO per (channel, from, to).
class Mailboxes {
public:
    void post(int channel, int from, int to, Bytes bytes) {
        {
            std::lock_guard lock(m_mutex);
            m_boxes[{channel, from, to}].push_back(std::move(bytes));
        }
        m_posted.notify_all();
    }
    Bytes take(int channel, int from, int to) {
        std::unique_lock lock(m_mutex);
        auto& box = m_boxes[{channel, from, to}];
        m_posted.wait(lock, [&] { return !box.empty(); });
        Bytes bytes = std::move(box.front());
        box.pop_front();
        return bytes;
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_posted;
    std::map<std::tuple<int, int, int>, std::deque<Bytes>> m_boxes;
};

constexpr int kPointToPoint = 0;
constexpr int kCollective = 1;

class ThreadComm final : public Comm {
public:
    ThreadComm(std::shared_ptr<Mailboxes> mail, int rank, int size) : m_mail(std::move(mail)), m_rank(rank), m_size(size) {}
    int rank() const noexcept override { return m_rank; }
    int size() const noexcept override { return m_size; }
    std::vector<Bytes> all_gather(std::span<const std::byte> local) override {
        for (int to = 0; to < m_size; ++to)
            if (to != m_rank) post(kCollective, to, local);
        std::vector<Bytes> all(static_cast<std::size_t>(m_size));
        for (int from = 0; from < m_size; ++from)
            all[static_cast<std::size_t>(from)] = from == m_rank ? Bytes(local.begin(), local.end()) : take(kCollective, from);
        return all;
    }
    Bytes broadcast(std::span<const std::byte> bytes, int root) override {
        if (m_rank != root) return take(kCollective, root);
        for (int to = 0; to < m_size; ++to)
            if (to != m_rank) post(kCollective, to, bytes);
        return Bytes(bytes.begin(), bytes.end());
    }
    void send(std::span<const std::byte> bytes, int destination) override { post(kPointToPoint, destination, bytes); }
    Bytes receive(int source) override { return take(kPointToPoint, source); }
    std::int64_t bytes_sent() const noexcept override { return m_sent; }
    std::int64_t bytes_received() const noexcept override { return m_received; }
    std::string host() const override { return "threads"; }
    int node_rank() const noexcept override { return m_rank; }  // one node
    int node_size() const noexcept override { return m_size; }

private:
    void post(int channel, int to, std::span<const std::byte> bytes) {
        if (to < 0 || to >= m_size || to == m_rank) throw std::logic_error("ThreadComm: no rank " + std::to_string(to));
        m_sent += static_cast<std::int64_t>(bytes.size());
        m_mail->post(channel, m_rank, to, Bytes(bytes.begin(), bytes.end()));
    }
    Bytes take(int channel, int from) {
        if (from < 0 || from >= m_size || from == m_rank) throw std::logic_error("ThreadComm: no rank " + std::to_string(from));
        Bytes bytes = m_mail->take(channel, from, m_rank);
        m_received += static_cast<std::int64_t>(bytes.size());
        return bytes;
    }
    std::shared_ptr<Mailboxes> m_mail;
    int m_rank;
    int m_size;
    std::int64_t m_sent = 0;
    std::int64_t m_received = 0;
};

}  // namespace

void run_ranks(int ranks, const std::function<void(Comm&)>& body) {
    auto mail = std::make_shared<Mailboxes>();
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank)
        threads.emplace_back([&, rank] {
            ThreadComm comm(mail, rank, ranks);
            try {
                body(comm);
            } catch (...) {
                errors[static_cast<std::size_t>(rank)] = std::current_exception();
            }
        });
    for (auto& thread : threads) thread.join();
    for (const auto& error : errors)
        if (error) std::rethrow_exception(error);
}

}  // namespace fathom::test
