#include "core/io/detail/input_checks.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/io/errors.hpp"

namespace fathom::io::detail {

void require_regular_file(const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
        if (errno == ENOENT) throw ReadError(path, "no such file");
        throw ReadError(path, std::strerror(errno));
    }
    if (S_ISREG(info.st_mode)) return;
    if (S_ISDIR(info.st_mode)) throw ReadError(path, "is a directory, expected a file");
    const char* kind = S_ISFIFO(info.st_mode)  ? "a FIFO (named pipe)"
                       : S_ISSOCK(info.st_mode) ? "a socket"
                       : S_ISCHR(info.st_mode)  ? "a character device"
                       : S_ISBLK(info.st_mode)  ? "a block device"
                                                : "not a regular file";
    throw ReadError(path, std::string("is ") + kind + ", not a regular file; only regular files and folders are read");
}

namespace {
std::uint64_t g_memory_limit = 0;
}  // namespace

void set_memory_limit_for_checks(std::uint64_t bytes) { g_memory_limit = bytes; }

std::uint64_t physical_memory_bytes() {
    if (g_memory_limit) return g_memory_limit;
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

std::string gibibytes(std::uint64_t bytes) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buffer;
}

void check_declared_size(const std::string& path, const std::string& object, const std::string& what,
                         std::uint64_t count, std::uint64_t element_bytes) {
    const std::uint64_t memory = physical_memory_bytes();
    const bool overflows = element_bytes != 0 && count > std::numeric_limits<std::uint64_t>::max() / element_bytes;
    const std::uint64_t needed = overflows ? std::numeric_limits<std::uint64_t>::max() : count * element_bytes;
    if (!overflows && (memory == 0 || needed <= memory)) return;
    throw FormatError(path, object,
                      "declares " + what + " (needs " + (overflows ? std::string("more than 2^64 bytes") : gibibytes(needed)) +
                          ", more than this machine's " + gibibytes(memory) +
                          " of memory); the file is corrupt or too large for this machine");
}

std::optional<std::size_t> invalid_utf8_offset(std::string_view text) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t size = text.size();
    std::size_t position = 0;
    while (position < size) {
        const unsigned char lead = bytes[position];
        if (lead < 0x80) {
            ++position;
            continue;
        }
        std::size_t length = 0;
        std::uint32_t code = 0, minimum = 0;
        if ((lead & 0xE0) == 0xC0) length = 2, code = lead & 0x1F, minimum = 0x80;
        else if ((lead & 0xF0) == 0xE0) length = 3, code = lead & 0x0F, minimum = 0x800;
        else if ((lead & 0xF8) == 0xF0) length = 4, code = lead & 0x07, minimum = 0x10000;
        else return position;
        if (position + length > size) return position;
        for (std::size_t index = 1; index < length; ++index) {
            const unsigned char next = bytes[position + index];
            if ((next & 0xC0) != 0x80) return position;
            code = (code << 6) | (next & 0x3F);
        }
        if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return position;
        position += length;
    }
    return std::nullopt;
}

}  // namespace fathom::io::detail
