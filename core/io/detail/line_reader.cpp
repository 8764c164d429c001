#include "core/io/detail/line_reader.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/io/detail/input_checks.hpp"
#include "core/io/errors.hpp"

namespace fathom::io::detail {

namespace {
constexpr std::size_t initial_buffer_bytes = 1u << 20;
gzFile as_gz(void* file) { return static_cast<gzFile>(file); }
}  // namespace

LineReader::LineReader(const std::string& path, std::string error_file, std::string error_object)
    : m_error_file(std::move(error_file)), m_error_object(std::move(error_object)), m_buffer(initial_buffer_bytes) {
    require_regular_file(path);  // before gzopen: a FIFO would block
    errno = 0;
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file) throw ReadError(path, errno ? std::strerror(errno) : "cannot open");
    gzbuffer(file, 256u << 10);
    m_file = file;
}

LineReader::~LineReader() {
    if (m_file) gzclose_r(as_gz(m_file));
}

void LineReader::fail(const std::string& problem) const { throw FormatError(m_error_file, m_error_object, problem); }

bool LineReader::fill() {
    if (m_eof) return false;
    // Keep the unread tail at the front of the buffer, grow when a line fills it all.
    if (m_begin > 0) {
        std::memmove(m_buffer.data(), m_buffer.data() + m_begin, m_end - m_begin);
        m_buffer_offset += static_cast<std::int64_t>(m_begin);
        m_end -= m_begin;
        m_begin = 0;
    }
    if (m_end == m_buffer.size()) {
        if (m_buffer.size() >= max_line_bytes)
            fail("line " + std::to_string(m_line_number + 1) + " is longer than " +
                 std::to_string(max_line_bytes >> 20) + " MiB (binary or corrupt file?)");
        m_buffer.resize(m_buffer.size() * 2);
    }
    const auto space = static_cast<unsigned>(m_buffer.size() - m_end);
    const int got = gzread(as_gz(m_file), m_buffer.data() + m_end, space);
    int code = Z_OK;
    const char* message = gzerror(as_gz(m_file), &code);
    if (got < 0 || (code != Z_OK && code != Z_BUF_ERROR))
        fail(std::string("corrupt gzip stream (") + (message ? message : "read error") + ")");
    if (got == 0) {
        // zlib reports a gzip stream that ends early as Z_BUF_ERROR at the end of input.
        if (code == Z_BUF_ERROR) fail("truncated gzip stream (unexpected end of file)");
        m_eof = true;
        return false;
    }
    m_end += static_cast<std::size_t>(got);
    return true;
}

bool LineReader::next(std::string_view& line) {
    for (;;) {
        const char* start = m_buffer.data() + m_begin;
        const void* newline = std::memchr(start, '\n', m_end - m_begin);
        if (newline || (m_eof && m_begin < m_end)) {
            const char* stop = newline ? static_cast<const char*>(newline) : m_buffer.data() + m_end;
            std::size_t length = static_cast<std::size_t>(stop - start);
            m_line_offset = m_buffer_offset + static_cast<std::int64_t>(m_begin);
            m_begin += length + (newline ? 1 : 0);
            if (length > 0 && start[length - 1] == '\r') --length;
            ++m_line_number;
            line = std::string_view(start, length);
            return true;
        }
        if (!fill()) {
            if (m_begin < m_end) continue;  // last line without a newline
            return false;
        }
    }
}

void LineReader::check_rest_of_stream() {
    m_begin = m_end;
    while (fill()) m_begin = m_end;
}

void LineReader::seek(std::int64_t offset, std::int64_t line_number) {
    const std::int64_t buffered_end = m_buffer_offset + static_cast<std::int64_t>(m_end);
    if (offset >= m_buffer_offset && offset <= buffered_end) {
        // Already buffered: move within the buffer.
        m_begin = static_cast<std::size_t>(offset - m_buffer_offset);
    } else {
        if (gzseek(as_gz(m_file), static_cast<z_off_t>(offset), SEEK_SET) != static_cast<z_off_t>(offset)) {
            int code = Z_OK;
            const char* message = gzerror(as_gz(m_file), &code);
            if (code == Z_BUF_ERROR) fail("truncated gzip stream (unexpected end of file)");
            fail(std::string("cannot seek to offset ") + std::to_string(offset) + " (" +
                 (code != Z_OK && message ? message : "past the end of the file") + ")");
        }
        m_begin = m_end = 0;
        m_buffer_offset = offset;
        m_eof = false;
    }
    m_line_number = line_number - 1;
    m_line_offset = offset;
}

}  // namespace fathom::io::detail
