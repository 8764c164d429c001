#pragma once
/// Atomic output files for every writer in core/io: write "<path>.tmp-<pid>" in the
/// destination folder, close, then rename() into place. A failure removes the
/// temporary file and never touches `path`. Used by the writers of core/io; other
/// layers write text files through io::write_text_file (csv_writer.hpp).
#include <functional>
#include <string>

namespace fathom::io::detail {

/// One output file under construction.
class AtomicOutput {
public:
    /// Checks the destination (its folder exists and is writable, `path` is not a
    /// folder) and throws WriteError naming `path` otherwise. Creates nothing.
    explicit AtomicOutput(std::string path);
    /// Removes the temporary file unless commit() succeeded.
    ~AtomicOutput();
    AtomicOutput(const AtomicOutput&) = delete;
    AtomicOutput& operator=(const AtomicOutput&) = delete;

    const std::string& path() const noexcept { return m_path; }
    /// "<path>.tmp-<pid>", where the writer writes.
    const std::string& temp_path() const noexcept { return m_temp_path; }

    /// Runs `body` (which writes temp_path()). On an exception: calls `on_failure`
    /// (to close open handles), removes the temporary file, and rethrows:
    /// Cancelled, FormatError, ReadError and std::invalid_argument unchanged; any
    /// other error as WriteError naming path() (a WriteError that named the temporary
    /// file is re-addressed to path()). After a failure every later run() throws.
    void run(const std::function<void()>& body, const std::function<void()>& on_failure = {});
    /// Renames the temporary file onto path() (replacing an existing file
    /// atomically). Throws WriteError naming path(); the temporary file is removed.
    void commit();
    bool committed() const noexcept { return m_committed; }

private:
    void remove_temp() noexcept;

    std::string m_path;
    std::string m_temp_path;
    bool m_failed = false;
    bool m_committed = false;
};

}  // namespace fathom::io::detail
