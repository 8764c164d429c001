#include "core/types/JobContext.hpp"

#include <algorithm>

namespace fathom {

void JobContext::begin_step(std::string step) {
    std::function<void(const std::string&)> observer;
    {
        std::lock_guard lock(m_mutex);
        m_progress = Progress{step, step, 0.0, {}};
        observer = m_stage_observer;
    }
    if (observer) observer(step);
    checkpoint();
}

void JobContext::begin_stage(std::string stage) {
    {
        std::lock_guard lock(m_mutex);
        m_progress.stage = m_progress.step.empty() || m_progress.step == stage ? stage : m_progress.step + ": " + stage;
        m_progress.fraction = 0.0;
        m_progress.message.clear();
    }
    checkpoint();
}

void JobContext::report(double fraction, std::string message) {
    {
        std::lock_guard lock(m_mutex);
        m_progress.fraction = std::clamp(fraction, 0.0, 1.0);
        if (!message.empty()) m_progress.message = std::move(message);
    }
    checkpoint();
}

Progress JobContext::progress() const {
    std::lock_guard lock(m_mutex);
    return m_progress;
}

void JobContext::set_stage_observer(std::function<void(const std::string&)> observer) {
    std::lock_guard lock(m_mutex);
    m_stage_observer = std::move(observer);
}

}  // namespace fathom
