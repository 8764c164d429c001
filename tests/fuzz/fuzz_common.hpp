#pragma once
// Shared by the libFuzzer targets: what a reader may throw on malformed input, and
// reading every row so that the row-time checks run too.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>

#include "core/io/RowSource.hpp"
#include "core/io/detail/input_checks.hpp"
#include "core/io/errors.hpp"
#include "core/io/readers.hpp"

namespace fathom::fuzz {

/// The readers refuse what the file declares beyond this (instead of the machine's
/// memory): scripts/fuzz gives libFuzzer a malloc limit above it, so that only an
/// allocation the size checks missed is reported as out-of-memory.
inline constexpr std::uint64_t k_memory_limit_bytes = std::uint64_t{1} << 30;

/// A scratch folder of this process (libFuzzer forks workers: one each).
inline const std::filesystem::path& scratch() {
    static const std::filesystem::path folder = [] {
        const char* base = std::getenv("FATHOM_FUZZ_SCRATCH");
        auto path = std::filesystem::path(base ? base : "/tmp") / ("fathom-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
        return path;
    }();
    return folder;
}

inline void write_file(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
    std::ofstream stream(path, std::ios::binary | std::ios::trunc);
    stream.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

/// Opens with `open`, reads every row in two halves; the readers' own errors are the
/// expected outcome of malformed input. Anything else escapes (a finding): a crash,
/// a sanitizer report, or an exception of another type (abort).
template <typename Open>
void read_everything(Open&& open) {
    io::detail::set_memory_limit_for_checks(k_memory_limit_bytes);
    try {
        io::OpenedDataset opened = open();
        const std::int64_t cells = opened.meta.shape.num_cells;
        if (cells > 0) {
            opened.source->read_rows(0, cells / 2);
            opened.source->read_rows(cells / 2, cells);
        }
    } catch (const io::FormatError&) {
    } catch (const io::ReadError&) {
    }
}

}  // namespace fathom::fuzz
