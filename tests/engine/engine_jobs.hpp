#pragma once
// Waiting for engine jobs in the engine tests.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/engine/Job.hpp"

namespace fathom::test {

/// The job's final status; fails the test when it has not ended within `limit`.
inline JobStatus finish(const JobHandle& handle, std::chrono::seconds limit = std::chrono::seconds(120)) {
    EXPECT_TRUE(handle.wait_for(limit)) << "job did not finish in time";
    return handle.status();
}

/// The steps a job ran, in order (its timings).
inline std::vector<std::string> steps_of(const JobStatus& status) {
    std::vector<std::string> steps;
    for (const auto& timing : status.timings) steps.push_back(timing.stage);
    return steps;
}

}  // namespace fathom::test
