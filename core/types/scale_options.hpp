#pragma once
/// Options of the standardisation (core/algo/scale.hpp).
#include <optional>

namespace fathom {

/// Options of scale.
struct ScaleOptions {
    /// Clip standardised values above this (scanpy 1.9: upper clip only). > 0 when set.
    std::optional<double> max_value;
    /// Also clip below at -max_value (scanpy >= 1.10 does when zero-centring).
    bool clip_below = false;
    /// Equal when every field is equal.
    friend bool operator==(const ScaleOptions&, const ScaleOptions&) = default;
};

}  // namespace fathom
