#pragma once
/// Default categorical colours, as scanpy assigns uns['<key>_colors'].
#include <span>
#include <string>
#include <vector>

namespace fathom {

/// scanpy/plotting/palettes.py (1.9): default_20 (vega_20_scanpy), default_28
/// (zeileis_28) and default_102 (godsnot_102), as "#rrggbb" strings. The one copy of
/// the categorical palettes: the GUI's colours (ui/ColorMaps) are made from these.
std::span<const char* const> scanpy_default_20() noexcept;
std::span<const char* const> scanpy_default_28() noexcept;
std::span<const char* const> scanpy_default_102() noexcept;

/// scanpy 1.9 `_set_default_colors_for_categorical_obs`: up to 20 categories use
/// palettes.default_20 (vega_20_scanpy), up to 28 default_28 (zeileis_28), up to 102
/// default_102 (godsnot_102); beyond that every category is grey (#d3d3d3) as scanpy does.
std::vector<std::string> default_category_colors(std::size_t num_categories);

}  // namespace fathom
