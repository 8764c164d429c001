#pragma once
/// Atomic output files: the one way Fathom writes a file. The content goes to
/// "<path>.tmp-<pid>" in the destination folder, which is closed and then rename()d onto
/// `path`. A failure or a cancel removes the temporary file and leaves `path` as it was:
/// absent, or the previous file intact. Every writer uses it: core/io's h5ad, 10x HDF5
/// and CSV writers, the engine's barcode and marker-table exports, fathom-cli's --report
/// and the GUI's figure export.
#include <functional>
#include <iosfwd>
#include <string>

namespace fathom {

/// Checks that `path` can be written before any work is done: not empty, not a folder,
/// in a folder that exists and is writable. Throws WriteError naming `path`
/// ("<path>: folder 'out' does not exist"). Creates nothing.
void check_output_path(const std::string& path);

/// Writes `path` atomically: `write` writes the whole content to a binary stream on the
/// temporary file. Throws WriteError naming `path` when the destination is unusable
/// (check_output_path), the temporary file cannot be created, the stream fails (a full
/// disk) or the rename fails. An exception from `write` propagates after the clean-up,
/// as AtomicFile::run() says (Cancelled, FormatError, ReadError, std::invalid_argument
/// unchanged; any other error as WriteError naming `path`).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

/// Removes the temporary file of every AtomicFile alive now (async-signal-safe: only
/// unlink()). A handler for a signal that ends the process (SIGINT, SIGTERM) calls it
/// so that no "<path>.tmp-<pid>" is left behind.
void remove_temporary_files_now() noexcept;

/// One output file under construction, for writers that need the temporary file's path
/// (HDF5 files) or write it in several steps: run() the steps, then commit().
class AtomicFile {
public:
    /// check_output_path(path); creates nothing.
    explicit AtomicFile(std::string path);
    /// Removes the temporary file unless commit() succeeded.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

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
    int m_pending_slot = -1;  ///< registry slot for remove_temporary_files_now()
    bool m_failed = false;
    bool m_committed = false;
};

}  // namespace fathom
