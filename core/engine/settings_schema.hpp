#pragma once
/// One description of every pipeline setting. Each row of pipeline_settings_schema()
/// names a setting once (its scanpy name, CLI flag, form label, range, choices, help and
/// the steps it feeds) and reads / writes it in PipelineSettings. Validation, the CLI
/// flags of `fathom-cli run`, the GUI's Pipeline form, session files, the uns params of
/// an exported h5ad and the README's option table are all made from it, so ranges and
/// defaults cannot disagree. Adding a setting = a field in the step's Options and a row
/// here.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/engine/PipelineSettings.hpp"
#include "core/types/filter_options.hpp"
#include "core/types/hvg_options.hpp"
#include "core/types/normalize_options.hpp"
#include "core/types/scale_options.hpp"

namespace fathom {

/// The steps of the pipeline, in order.
enum class PipelineStep { Qc, Preprocess, Hvg, Scale, Pca, Neighbors, Umap, Leiden, Markers };
/// "qc", "preprocess", "hvg", "scale", "pca", "neighbors", "umap", "leiden", "markers"
/// (the names JobContext and EngineConfig::step_observer report).
const char* step_name(PipelineStep step) noexcept;

/// A recipe as data: the preprocessing it runs, in order, with preset Options.
struct RecipeDefinition {
    Recipe recipe;
    const char* name;   ///< "zheng17", "seurat", "none" (CLI value, session value, uns)
    const char* label;  ///< shown in the form
    std::optional<FilterCellsOptions> filter_cells;  ///< sc.pp.filter_cells first (seurat: min_genes 200)
    std::optional<FilterGenesOptions> filter_genes;  ///< sc.pp.filter_genes (zheng17: min_counts 1; seurat: min_cells 3)
    /// sc.pp.normalize_total before selecting genes (zheng17: median target, key n_counts_all;
    /// seurat: target_sum 1e4). Unset = no normalisation.
    std::optional<NormalizeTotalOptions> normalize;
    /// Gene selection; unset = every gene is kept.
    std::optional<HvgOptions> hvg;
    /// The selection keeps the top n_top_genes (zheng17); false = hvg's own cut-offs
    /// decide (seurat: scanpy's min_mean, max_mean, min_disp).
    bool top_genes = false;
    bool renormalize = false;  ///< zheng17: normalize_total again on the selected genes
    bool log1p = false;        ///< log1p on the selected genes
    /// scale() of the selected genes; unset = centre only (PCA's zero_center).
    std::optional<ScaleOptions> scale;
};
/// The definition of `recipe`.
const RecipeDefinition& recipe_definition(Recipe recipe);
/// All recipes, in the order the form and the CLI list them.
const std::vector<RecipeDefinition>& recipe_definitions();

/// A setting's value as every front end exchanges it: Integer settings hold int64,
/// Real double, Flag bool, Choice the choice's name.
using SettingValue = std::variant<std::int64_t, double, bool, std::string>;

enum class SettingKind { Integer, Real, Flag, Choice };

/// One value of a Choice setting.
struct SettingChoice {
    std::string name;   ///< as written on the command line, in sessions and uns ("wilcoxon")
    std::string label;  ///< as shown in the form ("Wilcoxon")
};

/// The description of one setting.
struct SettingSpec {
    std::string name;       ///< scanpy's parameter name where there is one ("n_pcs"); the session key
    std::string cli_flag;   ///< option of `fathom-cli run` ("--n-pcs"); empty = set through `enables`
    std::string label;      ///< form label
    SettingKind kind = SettingKind::Integer;
    std::vector<PipelineStep> steps;  ///< steps whose results depend on it (first = where the form shows it)
    double minimum = 0.0;   ///< inclusive range of Integer and Real settings
    double maximum = 0.0;
    double increment = 1.0; ///< form spin-box step
    int decimals = 0;       ///< form decimals of a Real setting
    std::vector<SettingChoice> choices;  ///< Choice settings
    std::string help;
    /// Flag settings that switch a step on: the switch this value belongs to ("run_umap").
    /// In the form the value is disabled while the switch is off; on the command line
    /// the value's option turns the switch on when the switch has no flag of its own,
    /// else needs it.
    std::string switch_name;
    /// Step switches: the switch it needs ("run_umap" needs "run_neighbors").
    std::string requires_switch;
    /// Switches a step on or off (run_neighbors, run_umap, ...); not a parameter of it.
    bool step_switch = false;
    /// Key of the setting in version-1 session files, when it differed.
    std::string legacy_key;
    std::function<SettingValue(const PipelineSettings&)> get;
    /// Sets a value already checked by check_setting_value.
    std::function<void(PipelineSettings&, const SettingValue&)> set;
};

/// Every setting, in form order.
const std::vector<SettingSpec>& pipeline_settings_schema();
/// The setting named `name` (SettingSpec::name or legacy_key); null when none.
const SettingSpec* find_setting(std::string_view name);

/// Throws std::invalid_argument ("n_pcs must be in [1, 500] (got 0)", "markers must be
/// one of t-test, t-test_overestim_var, wilcoxon (got 'x')") when `value` has the wrong
/// type or lies outside the setting's range or choices.
void check_setting_value(const SettingSpec& spec, const SettingValue& value);
/// `value` as text: integers in decimal, reals with up to 17 significant digits,
/// flags as true / false, choices by name.
std::string format_setting_value(const SettingSpec& spec, const SettingValue& value);
/// Parses text written as format_setting_value writes it (flags also accept 1/0,
/// yes/no, on/off); throws std::invalid_argument naming the setting. The result is
/// checked with check_setting_value.
SettingValue parse_setting_value(const SettingSpec& spec, std::string_view text);
/// check_setting_value, then spec.set.
void set_setting(PipelineSettings& settings, const SettingSpec& spec, const SettingValue& value);

/// The README's table of pipeline settings (Markdown: setting, CLI option, default,
/// range or choices, meaning).
std::string settings_markdown_table();

}  // namespace fathom
