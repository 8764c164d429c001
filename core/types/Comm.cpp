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
