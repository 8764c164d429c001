// Tests of core/memory/uninitialized.hpp: a vector whose default construction of
// elements does nothing still initialises wherever a value is given, and behaves as a
// std::vector otherwise.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory/uninitialized.hpp"

namespace fathom {
namespace {

TEST(UninitializedVector, ValueTakingCallsInitialise) {
    UninitializedVector<double> values(1000, 2.5);
    for (const double value : values) ASSERT_EQ(value, 2.5);
    values.assign(3000, -1.0);
    ASSERT_EQ(values.size(), 3000u);
    for (const double value : values) ASSERT_EQ(value, -1.0);
    values.resize(5000, 7.0);
    for (std::size_t index = 3000; index < 5000; ++index) ASSERT_EQ(values[index], 7.0);
    for (std::size_t index = 0; index < 3000; ++index) ASSERT_EQ(values[index], -1.0) << "resize moved the old values";
}

TEST(UninitializedVector, DefaultResizeKeepsOldValuesAndAcceptsWrites) {
    UninitializedVector<std::int32_t> values{1, 2, 3};
    values.resize(100000);  // new elements left unset: written before being read
    EXPECT_EQ(values[0], 1);
    EXPECT_EQ(values[2], 3);
    for (std::size_t index = 3; index < values.size(); ++index) values[index] = static_cast<std::int32_t>(index);
    std::int64_t sum = 0;
    for (const auto value : values) sum += value;
    EXPECT_EQ(sum, 6 + (100000LL * 99999 / 2 - 3));
    values.push_back(-5);
    EXPECT_EQ(values.back(), -5);
    const UninitializedVector<std::int32_t> copy = values;
    EXPECT_EQ(copy, values);
}

TEST(UninitializedVector, NonTrivialTypesAreStillConstructed) {
    UninitializedVector<std::string> strings(3);  // std::string's default constructor runs
    for (const auto& text : strings) EXPECT_TRUE(text.empty());
    strings.emplace_back(4, 'x');
    EXPECT_EQ(strings.back(), "xxxx");
}

}  // namespace
}  // namespace fathom
