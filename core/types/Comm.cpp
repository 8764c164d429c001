#include "core/types/Comm.hpp"

#include <cstring>
#include <stdexcept>
#include <unistd.h>

namespace fathom {

std::vector<Bytes> LocalComm::all_gather(std::span<const std::byte> local) {
    return {Bytes(local.begin(), local.end())};
}

Bytes LocalComm::broadcast(std::span<const std::byte> bytes, int root) {
    if (root != 0) throw std::invalid_argument("LocalComm::broadcast: root " + std::to_string(root) + " is not a rank");
    return Bytes(bytes.begin(), bytes.end());
}

void LocalComm::send(std::span<const std::byte>, int destination) {
    throw std::logic_error("LocalComm::send: one process has no rank " + std::to_string(destination));
}

Bytes LocalComm::receive(int source) {
    throw std::logic_error("LocalComm::receive: one process has no rank " + std::to_string(source));
}

std::string LocalComm::host() const {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
    return name;
}

void ByteReader::copy(void* out, std::size_t size) {
    if (size > m_bytes.size() - m_offset) fail();
    if (size) std::memcpy(out, m_bytes.data() + m_offset, size);
    m_offset += size;
}

void ByteReader::fail() { throw std::runtime_error("ByteReader: a message between ranks is shorter than expected"); }

}  // namespace fathom
