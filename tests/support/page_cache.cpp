#include "tests/support/page_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <vector>

namespace fathom::test {

double resident_fraction(const std::string& path) {
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) throw std::runtime_error("cannot open " + path);
    struct stat info {};
    ::fstat(descriptor, &info);
    const auto size = static_cast<std::size_t>(info.st_size);
    if (size == 0) {
        ::close(descriptor);
        return 0.0;
    }
    void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, descriptor, 0);
    ::close(descriptor);
    if (mapping == MAP_FAILED) throw std::runtime_error("cannot map " + path);
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> pages((size + page - 1) / page);
    const int status = ::mincore(mapping, size, pages.data());
    ::munmap(mapping, size);
    if (status != 0) throw std::runtime_error("mincore failed on " + path);
    std::size_t resident = 0;
    for (const unsigned char flags : pages) resident += flags & 1u;
    return static_cast<double>(resident) / static_cast<double>(pages.size());
}

void read_whole_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> buffer(1 << 20);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    }
}

std::optional<std::string> page_cache_unobservable(const std::string& path) {
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return "cannot open " + path;
    ::fsync(descriptor);  // written pages are dirty until written back, and stay cached
    read_whole_file(path);
    const double cached = resident_fraction(path);
    ::posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED);
    const double dropped = resident_fraction(path);
    ::close(descriptor);
    if (cached >= 0.9 && dropped <= 0.1) return std::nullopt;
    return "the page cache of " + path + " cannot be observed or dropped on this file system (" + std::to_string(cached) +
           " of it resident after a read, " + std::to_string(dropped) + " after POSIX_FADV_DONTNEED)";
}

}  // namespace fathom::test
