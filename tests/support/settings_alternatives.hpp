#pragma once
// For tests that walk the settings schema: a valid value of each setting other than its
// value in a given PipelineSettings.
#include <algorithm>
#include <string>

#include "core/engine/settings_schema.hpp"

namespace fathom::test {

/// A value of `spec` that differs from its value in `base` and lies in its range:
/// integers and reals one increment up (down at the top of the range), flags flipped,
/// choices the last other choice. min_dist stays below spread; an unset upper QC limit
/// (max_counts, max_genes: 0) becomes the top of its range, which keeps every cell.
inline SettingValue other_value(const SettingSpec& spec, const PipelineSettings& base) {
    const SettingValue now = spec.get(base);
    if (spec.name == "max_counts" && std::get<double>(now) == 0.0) return spec.maximum;
    if (spec.name == "max_genes" && std::get<std::int64_t>(now) == 0) return static_cast<std::int64_t>(spec.maximum);
    switch (spec.kind) {
        case SettingKind::Integer: {
            const auto value = std::get<std::int64_t>(now);
            const auto step = static_cast<std::int64_t>(spec.increment);
            return value + step <= static_cast<std::int64_t>(spec.maximum) ? value + step : value - step;
        }
        case SettingKind::Real: {
            const double value = std::get<double>(now);
            return value + spec.increment <= spec.maximum ? value + spec.increment : value - spec.increment;
        }
        case SettingKind::Flag: return !std::get<bool>(now);
        case SettingKind::Choice:
            // The last other choice (recipe: none, which runs on any data).
            for (auto entry = spec.choices.rbegin(); entry != spec.choices.rend(); ++entry)
                if (entry->name != std::get<std::string>(now)) return entry->name;
    }
    return now;
}

/// `base` with `spec` set to other_value; a step switched off also switches off the
/// steps that need it, so that the result validates.
inline PipelineSettings with_other_value(const SettingSpec& spec, const PipelineSettings& base) {
    PipelineSettings out = base;
    set_setting(out, spec, other_value(spec, base));
    for (bool changed = true; changed;) {
        changed = false;
        for (const auto& other : pipeline_settings_schema()) {
            if (other.requires_switch.empty() || !std::get<bool>(other.get(out))) continue;
            if (!std::get<bool>(find_setting(other.requires_switch)->get(out))) {
                other.set(out, false);
                changed = true;
            }
        }
    }
    return out;
}

}  // namespace fathom::test
