#pragma once
/// Streaming line reader over plain or gzip-compressed text (zlib's gzread reads plain
/// files transparently). Not part of the public API: include only from core/io sources
/// and tests. Never holds more than one buffer of decompressed text.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fathom::io::detail {

/// Reads a text file line by line. Lines are returned without the trailing "\n" or
/// "\r\n". Errors are io::ReadError (cannot open) or io::FormatError(file, object,
/// ...) for a truncated or corrupt gzip stream and for over-long lines, where `file`
/// and `object` are the names given at construction.
class LineReader {
public:
    /// Opens `path`. `error_file` / `error_object` name the file in error messages
    /// (e.g. the dataset folder and "matrix.mtx.gz").
    LineReader(const std::string& path, std::string error_file, std::string error_object);
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;
    ~LineReader();

    /// Next line into `line` (valid until the next call); false at the end of the file.
    bool next(std::string_view& line);
    /// 1-based number of the line last returned by next() (0 before the first).
    std::int64_t line_number() const noexcept { return m_line_number; }
    /// Offset in the decompressed text of the start of the line last returned.
    std::int64_t line_offset() const noexcept { return m_line_offset; }
    /// Offset in the decompressed text where the next line starts.
    std::int64_t next_offset() const noexcept { return m_buffer_offset + static_cast<std::int64_t>(m_begin); }
    /// Positions the reader so that the next line starts at decompressed `offset`;
    /// `line_number` is the number that line carries (for messages). Forward seeks in a
    /// gzip stream decompress and skip; backward seeks rewind to the start.
    void seek(std::int64_t offset, std::int64_t line_number);

    /// Reads (and discards) the rest of the file so that a corrupt or truncated gzip
    /// stream is reported (FormatError) rather than the garbled text it produced; call
    /// on the error path before reporting a parse error. Returns normally when intact.
    void check_rest_of_stream();

    /// Longest accepted line; longer ones give a FormatError (binary or corrupt input).
    static constexpr std::size_t max_line_bytes = 16u << 20;

private:
    bool fill();
    [[noreturn]] void fail(const std::string& problem) const;

    void* m_file = nullptr;           ///< gzFile
    std::string m_error_file, m_error_object;
    std::vector<char> m_buffer;
    std::size_t m_begin = 0, m_end = 0;  ///< unread bytes are m_buffer[m_begin, m_end)
    std::int64_t m_buffer_offset = 0;    ///< decompressed offset of m_buffer[0]
    std::int64_t m_line_number = 0, m_line_offset = 0;
    bool m_eof = false;
};

}  // namespace fathom::io::detail
