#pragma once
/// A job handle paired with the typed value the job produces.
#include <memory>
#include <mutex>

#include "core/engine/Job.hpp"

namespace fathom {

/// Slot a job writes its result into; read by the Pending that owns it.
template <typename T>
class ResultSlot {
public:
    void set(std::shared_ptr<const T> value) {
        std::lock_guard lock(m_mutex);
        m_value = std::move(value);
    }
    std::shared_ptr<const T> get() const {
        std::lock_guard lock(m_mutex);
        return m_value;
    }

private:
    mutable std::mutex m_mutex;
    std::shared_ptr<const T> m_value;
};

/// The handle of a job that produces one immutable T. value() is null until the job
/// has Succeeded. Copyable and thread-safe.
template <typename T>
class Pending {
public:
    Pending() = default;
    Pending(JobHandle handle, std::shared_ptr<ResultSlot<T>> slot) : m_handle(std::move(handle)), m_slot(std::move(slot)) {}
    const JobHandle& handle() const noexcept { return m_handle; }
    JobStatus status() const { return m_handle.status(); }
    void cancel() const { m_handle.cancel(); }
    /// Null until the job succeeded.
    std::shared_ptr<const T> value() const { return m_slot ? m_slot->get() : nullptr; }
    /// Waits for the job and returns its value (null when it failed or was cancelled).
    std::shared_ptr<const T> wait() const {
        m_handle.wait();
        return value();
    }

private:
    JobHandle m_handle;
    std::shared_ptr<ResultSlot<T>> m_slot;
};

}  // namespace fathom
