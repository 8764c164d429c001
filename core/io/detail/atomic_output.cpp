#include "core/io/detail/atomic_output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "core/types/JobContext.hpp"
#include "core/io/errors.hpp"

namespace fathom::io::detail {

namespace fs = std::filesystem;

AtomicOutput::AtomicOutput(std::string path) : m_path(std::move(path)) {
    if (m_path.empty()) throw WriteError(m_path, "empty output path");
    m_temp_path = m_path + ".tmp-" + std::to_string(::getpid());
    std::error_code error;
    if (fs::is_directory(m_path, error)) throw WriteError(m_path, "is a folder, expected a file name");
    fs::path folder = fs::path(m_path).parent_path();
    if (folder.empty()) folder = ".";
    if (!fs::exists(folder, error)) throw WriteError(m_path, "folder '" + folder.string() + "' does not exist");
    if (!fs::is_directory(folder, error)) throw WriteError(m_path, "'" + folder.string() + "' is not a folder");
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
        throw WriteError(m_path, "cannot write in folder '" + folder.string() + "': " + std::strerror(errno));
}

AtomicOutput::~AtomicOutput() {
    if (!m_committed) remove_temp();
}

void AtomicOutput::remove_temp() noexcept {
    std::error_code error;
    fs::remove(m_temp_path, error);
}

void AtomicOutput::run(const std::function<void()>& body, const std::function<void()>& on_failure) {
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
        std::string message = error.what();
        const std::string prefix = error.file() + ": ";
        if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
        throw WriteError(m_path, message);
    } catch (const std::exception& error) {
        clean_up();
        throw WriteError(m_path, error.what());
    }
}

void AtomicOutput::commit() {
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

}  // namespace fathom::io::detail
