#pragma once
/// Thin RAII layer over the HDF5 C API used by every HDF5 reader and writer in core/io.
/// Not part of the public API: include only from core/io sources. Every failure is
/// reported as io::FormatError / ReadError / WriteError naming the file and object;
/// HDF5's automatic error stack printing is switched off.
#include <hdf5.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/io/errors.hpp"

namespace fathom::io::h5 {

/// Switches HDF5's automatic error printing off (idempotent, thread-safe).
void silence_errors();

/// Fuzzing and tests: while set, File::open_read(path) opens this byte buffer with
/// HDF5's core driver (H5Pset_file_image) instead of the file `path`, and the checks
/// that read raw bytes read the buffer. The buffer must outlive every open File.
/// One image at a time, for the whole process; clear_file_image() ends it.
void set_file_image(const std::string& path, const void* data, std::size_t size);
void clear_file_image();

/// Owns one hid_t and closes it with the matching H5*close.
class Handle {
public:
    using Closer = herr_t (*)(hid_t);
    Handle() = default;
    Handle(hid_t id, Closer closer) : m_id(id), m_closer(closer) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& other) noexcept : m_id(std::exchange(other.m_id, H5I_INVALID_HID)), m_closer(other.m_closer) {}
    Handle& operator=(Handle&& other) noexcept {
        if (this != &other) {
            reset();
            m_id = std::exchange(other.m_id, H5I_INVALID_HID);
            m_closer = other.m_closer;
        }
        return *this;
    }
    ~Handle() { reset(); }
    void reset() {
        if (m_id >= 0 && m_closer) m_closer(m_id);
        m_id = H5I_INVALID_HID;
    }
    hid_t get() const noexcept { return m_id; }
    /// Gives up ownership without closing.
    hid_t release() noexcept { return std::exchange(m_id, H5I_INVALID_HID); }
    explicit operator bool() const noexcept { return m_id >= 0; }

private:
    hid_t m_id = H5I_INVALID_HID;
    Closer m_closer = nullptr;
};

/// What a stored element is.
enum class TypeClass { Integer, Float, String, Enum, Compound, Reference, Other };

/// Type, rank and extent of a dataset or attribute.
struct Info {
    TypeClass type_class = TypeClass::Other;
    std::size_t type_size = 0;        ///< bytes per element
    bool is_signed = true;            ///< integers only
    std::vector<std::int64_t> dims;   ///< empty for scalars
    std::int64_t num_elements() const noexcept {
        std::int64_t total = 1;
        for (auto d : dims) total *= d;
        return total;
    }
};

/// A file opened for reading (or writing) with its path kept for error messages.
class File {
public:
    /// Opens read-only. Throws ReadError when the file cannot be opened and
    /// FormatError("", "not an HDF5 file") when it is not HDF5.
    static File open_read(const std::string& path);
    /// Creates (truncates) a file for writing. Throws WriteError.
    static File create(const std::string& path);

    const std::string& path() const noexcept { return m_path; }
    hid_t id() const noexcept { return m_file.get(); }

    /// Read-once mode, for a pass that keeps what it reads in memory and will not read
    /// the file again: the reads drop the file's pages from the page cache (posix_fadvise
    /// DONTNEED) at most every kReadOnceDropSeconds, and turning the mode off drops the
    /// rest. A file read through the page cache otherwise takes fresh pages the size of
    /// the file (3.9 GB for 1.3M cells), which a machine that backs memory on first touch
    /// pays for in system time. Dropping after every read would also throw away the
    /// kernel's read-ahead.
    void set_read_once(bool on) noexcept;
    /// In read-once mode, drops the file's cached pages when the last drop is older than
    /// kReadOnceDropSeconds (the readers call it after each read).
    void drop_read_pages() const noexcept;
    static constexpr double kReadOnceDropSeconds = 0.25;
    /// The operating system's descriptor of the file (HDF5's POSIX driver), or -1.
    int descriptor() const noexcept;

    /// True when `object` (absolute path such as "/X/indptr") exists; checks every link
    /// on the way so that a missing parent is "absent", not an error. A soft or
    /// external link on the way whose target is absent (or a cycle of links) throws
    /// FormatError naming it: such a file is broken, not missing the object.
    bool exists(const std::string& object) const;
    /// Key of the object `object` resolves to (its header address): two paths with the
    /// same key are hard links to one object (cycle detection).
    std::string object_address(const std::string& object) const;
    bool is_group(const std::string& object) const;
    bool is_dataset(const std::string& object) const;
    /// Names of a group's members in HDF5's name order (anndata relies on column-order
    /// attributes for ordering, not on this).
    std::vector<std::string> members(const std::string& group) const;

    /// Info of a dataset; throws FormatError(object, "missing") when absent or not a dataset.
    Info dataset_info(const std::string& object) const;

    /// Reads elements [offset, offset + count) of a 1-D dataset (or the flattened
    /// elements of an N-D dataset) converted to T (HDF5 converts numeric types).
    /// Throws FormatError naming the object on any failure or when the stored type is
    /// not numeric.
    template <typename T>
    std::vector<T> read(const std::string& object, std::int64_t offset, std::int64_t count) const;
    /// The same elements written to out[0, count) (caller memory, e.g. a shard's arrays).
    template <typename T>
    void read_to(const std::string& object, std::int64_t offset, std::int64_t count, T* out) const;
    /// The whole dataset, flattened.
    template <typename T>
    std::vector<T> read_all(const std::string& object) const;
    /// Rows [row_begin, row_end) of a 2-D dataset, row-major, converted to T.
    template <typename T>
    std::vector<T> read_rows_2d(const std::string& object, std::int64_t row_begin, std::int64_t row_end) const;
    /// String dataset (fixed or variable length, ASCII or UTF-8), flattened.
    std::vector<std::string> read_strings(const std::string& object) const;
    std::vector<std::string> read_strings(const std::string& object, std::int64_t offset, std::int64_t count) const;

    // ---- attributes (on a group or dataset) ----
    bool has_attribute(const std::string& object, const std::string& name) const;
    Info attribute_info(const std::string& object, const std::string& name) const;
    /// Scalar or 1-element string attribute; nullopt when absent. Throws FormatError
    /// when present but not a string.
    std::optional<std::string> attribute_string(const std::string& object, const std::string& name) const;
    /// String-array attribute (e.g. column-order); nullopt when absent.
    std::optional<std::vector<std::string>> attribute_strings(const std::string& object, const std::string& name) const;
    /// Numeric attribute (scalar or array) converted to T; nullopt when absent.
    template <typename T>
    std::optional<std::vector<T>> attribute_numbers(const std::string& object, const std::string& name) const;
    /// Boolean attribute (anndata writes numpy bools as HDF5 enum or int8); nullopt when absent.
    std::optional<bool> attribute_bool(const std::string& object, const std::string& name) const;

    // ---- writing ----
    void create_group(const std::string& object) const;
    /// 1-D or 2-D numeric dataset; `dims` gives the shape; gzip level 0 = none
    /// (chunked when compressed).
    template <typename T>
    void write(const std::string& object, const std::vector<std::int64_t>& dims, const T* values, int gzip_level = 0) const;
    /// 1-D variable-length UTF-8 string dataset.
    void write_strings(const std::string& object, const std::vector<std::string>& values, int gzip_level = 0) const;
    void write_attribute(const std::string& object, const std::string& name, const std::string& value) const;
    void write_attribute(const std::string& object, const std::string& name, const std::vector<std::string>& values) const;
    void write_attribute(const std::string& object, const std::string& name, bool value) const;
    template <typename T>
    void write_attribute(const std::string& object, const std::string& name, const std::vector<T>& values) const;

    /// Flushes and closes the file; throws WriteError on failure (writers call this
    /// before renaming the temporary file into place).
    void close();

    /// FormatError for this file.
    [[noreturn]] void fail(const std::string& object, const std::string& problem) const;

    /// The dataset, after the checks libhdf5 1.10 does not make before reading it
    /// (virtual or external storage, stored bytes against the elements, chunks beyond a
    /// fixed dimension); FormatError naming it otherwise.
    Handle open_dataset(const std::string& object) const;

private:
    File(std::string path, Handle file) : m_path(std::move(path)), m_file(std::move(file)) {}
    Handle open_object(const std::string& object) const;
    void read_into(const std::string& object, hid_t memory_type, void* buffer, std::int64_t offset,
                   std::int64_t count) const;

    /// Checks the local heap of an old-style group before its links are looked up
    /// (libhdf5 1.10 crashes on a heap outside the file); each group once.
    void check_group(const std::string& group) const;

    std::string m_path;
    Handle m_file;
    bool m_read_once = false;
    mutable std::chrono::steady_clock::time_point m_last_drop{};  ///< read-once mode's last drop
    bool m_writable = false;
    mutable std::set<std::string> m_checked_groups;  ///< groups whose local heap was checked
};

/// HDF5 native memory type for T (float, double, int8..int64, uint8..uint64).
template <typename T>
hid_t native_type();

/// Path join: join("/obs", "cell_type") == "/obs/cell_type"; join("/", "X") == "/X".
std::string join(const std::string& group, const std::string& name);

}  // namespace fathom::io::h5
