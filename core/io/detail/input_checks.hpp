#pragma once
/// Checks every reader makes on untrusted input before it opens or allocates anything.
/// Include only from core/io sources.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fathom::io::detail {

/// Throws ReadError naming `path` unless it is a regular file (a FIFO, socket or device
/// would block or never end a read). Uses stat() only: nothing is opened.
void require_regular_file(const std::string& path);

/// Bytes of physical memory of this machine (0 when unknown), or the limit set by
/// set_memory_limit_for_checks().
std::uint64_t physical_memory_bytes();

/// Fuzzing: check_declared_size() compares with `bytes` instead of the machine's memory
/// (0 restores that). Not thread-safe; call before reading.
void set_memory_limit_for_checks(std::uint64_t bytes);

/// Throws FormatError(path, object, "declares <what> (needs X GiB, more than this
/// machine's Y GiB of memory)") when `count` elements of `element_bytes` each cannot
/// fit in physical memory (or overflow). Called before allocating storage whose size
/// comes from the file.
void check_declared_size(const std::string& path, const std::string& object, const std::string& what,
                         std::uint64_t count, std::uint64_t element_bytes);

/// Byte offset of the first invalid UTF-8 sequence in `text`; nullopt when valid
/// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::optional<std::size_t> invalid_utf8_offset(std::string_view text);

/// "GiB" figure with one decimal, for messages.
std::string gibibytes(std::uint64_t bytes);

}  // namespace fathom::io::detail
