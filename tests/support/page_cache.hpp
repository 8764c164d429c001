#pragma once
/// The page cache as tests see it: how much of a file is cached, and whether this file
/// system lets a test observe and drop it (tmpfs does not).
#include <optional>
#include <string>

namespace fathom::test {

/// The fraction of `path`'s pages in the page cache (mincore on a mapping of it).
double resident_fraction(const std::string& path);
/// Reads the whole file (into the page cache).
void read_whole_file(const std::string& path);
/// Writes `path` back to the disk, reads it into the page cache and drops it again
/// (POSIX_FADV_DONTNEED): the reason the cache cannot be observed or dropped on this
/// file system, or nothing when it can.
std::optional<std::string> page_cache_unobservable(const std::string& path);

}  // namespace fathom::test
