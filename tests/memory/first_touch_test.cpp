// resize_touched_in_parallel: a resize (zeros after the old values) whatever the path
// (small growth on one thread, large growth touched in parallel, shrinking).
#include "core/memory/first_touch.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

namespace fathom {
namespace {

TEST(FirstTouch, GrowsLikeResizeKeepingTheValuesAndZeroingTheRest) {
    for (const std::size_t size : {std::size_t{0}, std::size_t{1000}, std::size_t{3} << 20, std::size_t{9} << 20}) {
        std::vector<std::int32_t> values(777);
        std::iota(values.begin(), values.end(), 1);
        resize_touched_in_parallel(values, size);
        ASSERT_EQ(values.size(), size);
        for (std::size_t index = 0; index < size; ++index)
            ASSERT_EQ(values[index], index < 777 ? static_cast<std::int32_t>(index + 1) : 0) << "size " << size << ", index " << index;
    }
}

TEST(FirstTouch, GrowsInsideItsCapacityAndTwiceInARow) {
    std::vector<float> values;
    values.reserve(std::size_t{12} << 20);
    resize_touched_in_parallel(values, std::size_t{5} << 20);
    values[123] = 4.5f;
    resize_touched_in_parallel(values, std::size_t{10} << 20);
    ASSERT_EQ(values.size(), std::size_t{10} << 20);
    EXPECT_EQ(values[123], 4.5f);
    EXPECT_EQ(std::accumulate(values.begin(), values.end(), 0.0), 4.5);
    resize_touched_in_parallel(values, 10);
    EXPECT_EQ(values.size(), 10u);
}

}  // namespace
}  // namespace fathom
