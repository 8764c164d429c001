#include "core/types/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "core/types/JobContext.hpp"
#include "core/types/errors.hpp"

namespace fathom {

namespace fs = std::filesystem;

namespace {

// Temporary files of the AtomicFiles alive now, for remove_temporary_files_now() in a
// signal handler: fixed storage, lock-free flags, no allocation.
constexpr int k_max_pending = 32;
constexpr std::size_t k_max_pending_path = 4096;
struct PendingSlot {
    std::atomic<bool> claimed{false};  ///< owned by an AtomicFile
    std::atomic<bool> ready{false};    ///< path written
    char path[k_max_pending_path];
};
PendingSlot g_pending[k_max_pending];

int claim_pending(const std::string& path) {
    if (path.size() >= k_max_pending_path) return -1;
    for (int slot = 0; slot < k_max_pending; ++slot) {
        bool expected = false;
        if (!g_pending[slot].claimed.compare_exchange_strong(expected, true)) continue;
        std::memcpy(g_pending[slot].path, path.c_str(), path.size() + 1);
        g_pending[slot].ready.store(true, std::memory_order_release);
        return slot;
    }
    return -1;  // more than k_max_pending at once: that file is not removed on a signal
}

void release_pending(int slot) noexcept {
    if (slot < 0) return;
    g_pending[slot].ready.store(false, std::memory_order_release);
    g_pending[slot].claimed.store(false, std::memory_order_release);
}

}  // namespace

void remove_temporary_files_now() noexcept {
    for (auto& slot : g_pending)
        if (slot.ready.load(std::memory_order_acquire)) ::unlink(slot.path);
}

void check_output_path(const std::string& path) {
    if (path.empty()) throw WriteError(path, "empty output path");
    std::error_code error;
    if (fs::is_directory(path, error)) throw WriteError(path, "is a folder, expected a file name");
    fs::path folder = fs::path(path).parent_path();
    if (folder.empty()) folder = ".";
    if (!fs::exists(folder, error)) throw WriteError(path, "folder '" + folder.string() + "' does not exist");
    if (!fs::is_directory(folder, error)) throw WriteError(path, "'" + folder.string() + "' is not a folder");
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
        throw WriteError(path, "cannot write in folder '" + folder.string() + "': " + std::strerror(errno));
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
    AtomicFile file(path);
    std::ofstream stream;
    file.run(
        [&] {
            stream.open(file.temp_path(), std::ios::binary | std::ios::trunc);
            if (!stream) throw WriteError(path, "cannot create the temporary file " + file.temp_path());
            write(stream);
            stream.close();
            if (!stream) throw WriteError(path, "write failed (disk full?)");
        },
        [&] { stream.close(); });
    file.commit();
}

AtomicFile::AtomicFile(std::string path) : m_path(std::move(path)) {
    check_output_path(m_path);
    m_temp_path = m_path + ".tmp-" + std::to_string(::getpid());
    m_pending_slot = claim_pending(m_temp_path);
}

AtomicFile::~AtomicFile() {
    if (!m_committed) remove_temp();
    release_pending(m_pending_slot);
}

void AtomicFile::remove_temp() noexcept {
    std::error_code error;
    fs::remove(m_temp_path, error);
}

void AtomicFile::run(const std::function<void()>& body, const std::function<void()>& on_failure) {
    if (m_failed) throw WriteError(m_path, "an earlier write to this file failed");
    if (m_committed) throw WriteError(m_path, "already committed");
    auto clean_up = [&] {
        m_failed = true;
        if (on_failure) {
            try {
                on_failure();
            } catch (...) {  // closing after a failure must not mask the first error
            }
        }
        remove_temp();
    };
    try {
        body();
    } catch (const Cancelled&) {
        clean_up();
        throw;
    } catch (const FormatError&) {
        clean_up();
        throw;
    } catch (const ReadError&) {
        clean_up();
        throw;
    } catch (const std::invalid_argument&) {
        clean_up();
        throw;
    } catch (const WriteError& error) {
        clean_up();
        if (error.file() == m_path) throw;
        throw WriteError(m_path, error.reason());
    } catch (const std::exception& error) {
        clean_up();
        throw WriteError(m_path, error.what());
    }
}

void AtomicFile::commit() {
    if (m_failed) throw WriteError(m_path, "an earlier write to this file failed");
    if (m_committed) return;
    if (std::rename(m_temp_path.c_str(), m_path.c_str()) != 0) {
        const int code = errno;
        m_failed = true;
        remove_temp();
        throw WriteError(m_path, std::string("cannot rename the finished temporary file into place: ") +
                                     std::strerror(code));
    }
    m_committed = true;
}

}  // namespace fathom
