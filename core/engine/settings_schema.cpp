#include "core/engine/settings_schema.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace fathom {

const char* step_name(PipelineStep step) noexcept {
    switch (step) {
        case PipelineStep::Qc: return "qc";
        case PipelineStep::Preprocess: return "preprocess";
        case PipelineStep::Hvg: return "hvg";
        case PipelineStep::Scale: return "scale";
        case PipelineStep::Pca: return "pca";
        case PipelineStep::Neighbors: return "neighbors";
        case PipelineStep::Umap: return "umap";
        case PipelineStep::Leiden: return "leiden";
        case PipelineStep::Markers: return "markers";
    }
    return "?";
}

const std::vector<RecipeDefinition>& recipe_definitions() {
    static const std::vector<RecipeDefinition> recipes = [] {
        std::vector<RecipeDefinition> out;
        {
            // scanpy 1.9 pp.recipe_zheng17: filter_genes(min_counts=1);
            // normalize_total(key_added='n_counts_all'); filter_genes_dispersion(
            // flavor='cell_ranger', n_top_genes, log=False); normalize_total(); log1p; scale().
            RecipeDefinition zheng17{Recipe::Zheng17, "zheng17", "zheng17", {}, {}, {}, {}, true, true, true, ScaleOptions{}};
            zheng17.filter_genes = FilterGenesOptions{};
            zheng17.filter_genes->min_counts = 1.0;
            zheng17.normalize = NormalizeTotalOptions{};
            HvgOptions hvg;
            hvg.flavor = HvgFlavor::CellRanger;
            hvg.api = HvgApi::FilterGenesDispersion;
            hvg.log = false;
            zheng17.hvg = hvg;
            out.push_back(zheng17);
        }
        {
            // scanpy 1.9 pp.recipe_seurat: filter_cells(min_genes=200); filter_genes(min_cells=3);
            // normalize_total(target_sum=1e4); filter_genes_dispersion(flavor='seurat', log=False)
            // with its cut-offs (min_mean 0.0125, max_mean 3, min_disp 0.5; no n_top_genes);
            // log1p; scale(max_value=10).
            const SeuratRecipeOptions defaults;
            RecipeDefinition seurat{Recipe::Seurat, "seurat", "seurat", {}, {}, {}, defaults.hvg, false, false, defaults.log, {}};
            seurat.filter_cells = FilterCellsOptions{};
            seurat.filter_cells->min_genes = defaults.min_genes;
            seurat.filter_genes = FilterGenesOptions{};
            seurat.filter_genes->min_cells = defaults.min_cells;
            seurat.normalize = NormalizeTotalOptions{};
            seurat.normalize->target_sum = defaults.target_sum;
            seurat.scale = ScaleOptions{};
            seurat.scale->max_value = defaults.max_value;
            out.push_back(seurat);
        }
        // X already processed: every gene, centred (pp.pca's zero_center), not scaled.
        out.push_back(RecipeDefinition{Recipe::None, "none", "none (X already processed)", {}, {}, {}, {}, false, false, false, {}});
        return out;
    }();
    return recipes;
}

const RecipeDefinition& recipe_definition(Recipe recipe) {
    for (const auto& definition : recipe_definitions())
        if (definition.recipe == recipe) return definition;
    throw std::invalid_argument("recipe_definition: unknown recipe");
}

namespace {

/// get/set of an Integer setting through `access` (a generic lambda returning a
/// reference to the member).
template <typename Access>
SettingSpec integer(SettingSpec spec, Access access) {
    spec.kind = SettingKind::Integer;
    spec.get = [access](const PipelineSettings& settings) {
        return SettingValue(static_cast<std::int64_t>(access(settings)));
    };
    spec.set = [access](PipelineSettings& settings, const SettingValue& value) {
        auto& field = access(settings);
        field = static_cast<std::remove_reference_t<decltype(field)>>(std::get<std::int64_t>(value));
    };
    return spec;
}

template <typename Access>
SettingSpec real(SettingSpec spec, Access access) {
    spec.kind = SettingKind::Real;
    spec.get = [access](const PipelineSettings& settings) { return SettingValue(static_cast<double>(access(settings))); };
    spec.set = [access](PipelineSettings& settings, const SettingValue& value) { access(settings) = std::get<double>(value); };
    return spec;
}

template <typename Access>
SettingSpec flag(SettingSpec spec, Access access) {
    spec.kind = SettingKind::Flag;
    spec.get = [access](const PipelineSettings& settings) { return SettingValue(static_cast<bool>(access(settings))); };
    spec.set = [access](PipelineSettings& settings, const SettingValue& value) { access(settings) = std::get<bool>(value); };
    return spec;
}

/// A Choice setting over an enum: `values` pairs each enum value with its choice.
template <typename Enum, typename Access>
SettingSpec choice(SettingSpec spec, Access access, std::vector<std::pair<Enum, SettingChoice>> values) {
    spec.kind = SettingKind::Choice;
    for (const auto& [value, entry] : values) spec.choices.push_back(entry);
    spec.get = [access, values](const PipelineSettings& settings) {
        for (const auto& [value, entry] : values)
            if (value == access(settings)) return SettingValue(entry.name);
        throw std::invalid_argument("unknown enum value");
    };
    spec.set = [access, values](PipelineSettings& settings, const SettingValue& text) {
        for (const auto& [value, entry] : values)
            if (entry.name == std::get<std::string>(text)) access(settings) = value;
    };
    return spec;
}

std::vector<SettingSpec> make_schema() {
    using S = PipelineStep;
    std::vector<SettingSpec> rows;
    std::vector<std::pair<Recipe, SettingChoice>> recipes;
    for (const auto& definition : recipe_definitions()) recipes.push_back({definition.recipe, {definition.name, definition.label}});
    rows.push_back(choice(
        {.name = "recipe", .cli_flag = "--recipe", .label = "recipe", .steps = {S::Preprocess, S::Hvg, S::Scale},
         .help = "sc.pp.recipe_zheng17 or recipe_seurat on raw counts, or none when X is already processed"},
        [](auto& s) -> auto& { return s.recipe; }, recipes));
    rows.push_back(real({.name = "min_counts", .cli_flag = "--min-counts-per-cell", .label = "min counts per cell",
                         .steps = {S::Preprocess, S::Hvg, S::Scale}, .minimum = 0, .maximum = 1e9, .increment = 100,
                         .help = "drop cells with fewer total counts before the recipe (sc.pp.filter_cells(min_counts); "
                                 "0 = keep every cell)",
                         .legacy_key = "min_counts_per_cell"},
                        [](auto& s) -> auto& { return s.min_counts_per_cell; }));
    rows.push_back(real({.name = "max_counts", .cli_flag = "--max-counts-per-cell", .label = "max counts per cell",
                         .steps = {S::Preprocess, S::Hvg, S::Scale}, .minimum = 0, .maximum = 1e9, .increment = 1000,
                         .help = "drop cells with more total counts before the recipe (sc.pp.filter_cells(max_counts); "
                                 "0 = no limit)"},
                        [](auto& s) -> auto& { return s.max_counts_per_cell; }));
    rows.push_back(integer({.name = "min_genes", .cli_flag = "--min-genes-per-cell", .label = "min genes per cell",
                            .steps = {S::Preprocess, S::Hvg, S::Scale}, .minimum = 0, .maximum = 1000000000,
                            .increment = 50,
                            .help = "drop cells with fewer expressed genes before the recipe "
                                    "(sc.pp.filter_cells(min_genes); 0 = keep every cell)"},
                           [](auto& s) -> auto& { return s.min_genes_per_cell; }));
    rows.push_back(integer({.name = "max_genes", .cli_flag = "--max-genes-per-cell", .label = "max genes per cell",
                            .steps = {S::Preprocess, S::Hvg, S::Scale}, .minimum = 0, .maximum = 1000000000,
                            .increment = 100,
                            .help = "drop cells with more expressed genes before the recipe "
                                    "(sc.pp.filter_cells(max_genes); 0 = no limit)"},
                           [](auto& s) -> auto& { return s.max_genes_per_cell; }));
    rows.push_back(real({.name = "max_pct_counts_mt", .cli_flag = "--max-pct-counts-mt", .label = "max % mito counts",
                         .steps = {S::Preprocess, S::Hvg, S::Scale}, .minimum = 0, .maximum = 100, .increment = 1,
                         .decimals = 1,
                         .help = "drop cells whose mitochondrial share of counts (pct_counts_mt, genes named MT-/mt-) "
                                 "is above this percentage before the recipe (100 = keep every cell)"},
                        [](auto& s) -> auto& { return s.max_pct_counts_mt; }));
    rows.push_back(integer({.name = "n_top_genes", .cli_flag = "--n-top-genes", .label = "n_top_genes",
                            .steps = {S::Hvg, S::Scale}, .minimum = 1, .maximum = 100000, .increment = 100,
                            .help = "highly variable genes kept by recipe zheng17 (seurat keeps scanpy's cut-offs: mean in "
                                    "(0.0125, 3), normalised dispersion > 0.5)",
                            .legacy_key = "num_top_genes"},
                           [](auto& s) -> auto& { return s.num_top_genes; }));
    rows.push_back(integer({.name = "n_pcs", .cli_flag = "--n-pcs", .label = "n_pcs", .steps = {S::Pca}, .minimum = 1,
                            .maximum = 500, .help = "principal components (sc.pp.pca n_comps)", .legacy_key = "num_pcs"},
                           [](auto& s) -> auto& { return s.pca.num_components; }));
    rows.push_back(flag({.name = "run_neighbors", .label = "kNN graph", .steps = {S::Neighbors},
                         .help = "sc.pp.neighbors: the kNN graph and its fuzzy connectivities", .step_switch = true},
                        [](auto& s) -> auto& { return s.run_neighbors; }));
    rows.push_back(integer({.name = "n_neighbors", .cli_flag = "--neighbors", .label = "n_neighbors",
                            .steps = {S::Neighbors}, .minimum = 2, .maximum = 500,
                            .help = "neighbours per cell, the cell itself included (scanpy's count); "
                                    "on the command line, computes the kNN graph",
                            .switch_name = "run_neighbors", .legacy_key = "num_neighbors"},
                           [](auto& s) -> auto& { return s.neighbors.num_neighbors; }));
    rows.push_back(choice({.name = "knn_method", .cli_flag = "--knn-method", .label = "kNN method", .steps = {S::Neighbors},
                           .help = "auto: exact below 8192 cells (as scanpy), else IVF (k-means inverted file, "
                                   "refined on the graph); exact; ivf; nndescent (as pynndescent); hnsw (hnswlib)",
                           .switch_name = "run_neighbors"},
                          [](auto& s) -> auto& { return s.neighbors.method; },
                          std::vector<std::pair<KnnMethod, SettingChoice>>{{KnnMethod::Auto, {"auto", "auto"}},
                                                                           {KnnMethod::Exact, {"exact", "exact"}},
                                                                           {KnnMethod::Ivf, {"ivf", "IVF"}},
                                                                           {KnnMethod::NnDescent, {"nndescent", "NN-descent"}},
                                                                           {KnnMethod::Hnsw, {"hnsw", "HNSW"}}}));
    rows.push_back(flag({.name = "run_umap", .cli_flag = "--umap", .label = "UMAP", .steps = {S::Umap},
                         .help = "sc.tl.umap (needs the kNN graph)", .requires_switch = "run_neighbors", .step_switch = true},
                        [](auto& s) -> auto& { return s.run_umap; }));
    rows.push_back(real({.name = "min_dist", .cli_flag = "--min-dist", .label = "min_dist", .steps = {S::Umap},
                         .minimum = 0, .maximum = 100, .increment = 0.05, .decimals = 3,
                         .help = "UMAP min_dist (at most spread)", .switch_name = "run_umap"},
                        [](auto& s) -> auto& { return s.umap.min_dist; }));
    rows.push_back(real({.name = "spread", .cli_flag = "--spread", .label = "spread", .steps = {S::Umap},
                         .minimum = 0.001, .maximum = 100, .increment = 0.1, .decimals = 3, .help = "UMAP spread",
                         .switch_name = "run_umap"},
                        [](auto& s) -> auto& { return s.umap.spread; }));
    rows.push_back(integer({.name = "n_epochs", .cli_flag = "--umap-epochs", .label = "n_epochs", .steps = {S::Umap},
                            .minimum = 0, .maximum = 100000, .increment = 50,
                            .help = "UMAP epochs (0 = scanpy's default: 500 up to 10,000 cells, else 200)",
                            .switch_name = "run_umap", .legacy_key = "umap_epochs"},
                           [](auto& s) -> auto& { return s.umap.num_epochs; }));
    rows.push_back(integer({.name = "n_components", .cli_flag = "--umap-components", .label = "n_components",
                            .steps = {S::Umap}, .minimum = 2, .maximum = 3,
                            .help = "UMAP dimensions: 2, or 3 for the explorer's 3-D view",
                            .switch_name = "run_umap", .legacy_key = "umap_components"},
                           [](auto& s) -> auto& { return s.umap.num_components; }));
    rows.push_back(flag({.name = "run_leiden", .label = "Leiden", .steps = {S::Leiden},
                         .help = "sc.tl.leiden (needs the kNN graph)", .requires_switch = "run_neighbors", .step_switch = true},
                        [](auto& s) -> auto& { return s.run_leiden; }));
    rows.push_back(real({.name = "resolution", .cli_flag = "--leiden", .label = "resolution", .steps = {S::Leiden},
                         .minimum = 0.001, .maximum = 100, .increment = 0.1, .decimals = 3,
                         .help = "Leiden resolution; on the command line, runs Leiden", .switch_name = "run_leiden"},
                        [](auto& s) -> auto& { return s.leiden.resolution; }));
    rows.push_back(choice({.name = "flavor", .cli_flag = "--leiden-flavor", .label = "Leiden flavor", .steps = {S::Leiden},
                           .help = "leidenalg: leidenalg's optimiser as scanpy runs it (scanpy's labels; one thread); "
                                   "igraph: igraph_community_leiden; parallel: a parallel Leiden on every thread "
                                   "(GVE-style; same objective, other labels, the same for any thread count)",
                           .switch_name = "run_leiden"},
                          [](auto& s) -> auto& { return s.leiden.implementation; },
                          std::vector<std::pair<LeidenImplementation, SettingChoice>>{
                              {LeidenImplementation::Leidenalg, {"leidenalg", "leidenalg (scanpy's labels)"}},
                              {LeidenImplementation::Igraph, {"igraph", "igraph"}},
                              {LeidenImplementation::Parallel, {"parallel", "parallel"}}}));
    rows.push_back(flag({.name = "run_markers", .label = "marker genes", .steps = {S::Markers},
                         .help = "sc.tl.rank_genes_groups of the Leiden clusters (needs Leiden)",
                         .requires_switch = "run_leiden", .step_switch = true},
                        [](auto& s) -> auto& { return s.run_markers; }));
    rows.push_back(choice({.name = "markers", .cli_flag = "--markers", .label = "markers method", .steps = {S::Markers},
                           .help = "sc.tl.rank_genes_groups method; on the command line, finds the markers of the "
                                   "Leiden clusters",
                           .switch_name = "run_markers"},
                          [](auto& s) -> auto& { return s.markers.method; },
                          std::vector<std::pair<MarkerMethod, SettingChoice>>{
                              {MarkerMethod::TTest, {marker_method_name(MarkerMethod::TTest), "t-test"}},
                              {MarkerMethod::TTestOverestimVar,
                               {marker_method_name(MarkerMethod::TTestOverestimVar), "t-test (overestimated variance)"}},
                              {MarkerMethod::Wilcoxon, {marker_method_name(MarkerMethod::Wilcoxon), "Wilcoxon"}}}));
    rows.push_back(integer({.name = "n_genes", .cli_flag = "--marker-genes", .label = "n_genes", .steps = {S::Markers},
                            .minimum = 0, .maximum = 100000, .increment = 50,
                            .help = "marker genes kept per cluster, the top by score (rank_genes_groups n_genes; "
                                    "0 = every gene)",
                            .switch_name = "run_markers"},
                           [](auto& s) -> auto& { return s.markers.num_genes; }));
    rows.push_back(integer({.name = "random_state", .cli_flag = "--seed", .label = "random_state",
                            .steps = {S::Pca, S::Neighbors, S::Umap, S::Leiden}, .minimum = 0, .maximum = 2147483647,
                            .help = "seed of every randomised step (PCA's Lanczos start, the kNN search, UMAP, Leiden)",
                            .legacy_key = "seed"},
                           [](auto& s) -> auto& { return s.seed; }));
    rows.push_back(flag({.name = "deterministic", .cli_flag = "--deterministic", .label = "deterministic",
                         .steps = {S::Neighbors, S::Umap},
                         .help = "bit-for-bit reproducible kNN graph and UMAP for a seed at any thread count "
                                 "(an HNSW index built by one thread, deterministic UMAP SGD; slower)"},
                        [](auto& s) -> auto& { return s.deterministic; }));
    return rows;
}

std::string format_number(double value) {
    // Whole numbers in full ("100", not "1e+02").
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15)
        return std::to_string(static_cast<std::int64_t>(value));
    std::ostringstream out;
    out.precision(17);
    out << value;
    // Shortest text that reads back to the same double.
    for (int digits = 1; digits <= 17; ++digits) {
        std::ostringstream shorter;
        shorter.precision(digits);
        shorter << value;
        if (std::stod(shorter.str()) == value) return shorter.str();
    }
    return out.str();
}

std::string range_text(const SettingSpec& spec) {
    if (spec.kind == SettingKind::Integer)
        return "[" + std::to_string(static_cast<std::int64_t>(spec.minimum)) + ", " +
               std::to_string(static_cast<std::int64_t>(spec.maximum)) + "]";
    return "[" + format_number(spec.minimum) + ", " + format_number(spec.maximum) + "]";
}

std::string choice_list(const SettingSpec& spec) {
    std::string out;
    for (const auto& entry : spec.choices) out += (out.empty() ? "" : ", ") + entry.name;
    return out;
}

const char* kind_word(SettingKind kind) {
    switch (kind) {
        case SettingKind::Integer: return "an integer";
        case SettingKind::Real: return "a number";
        case SettingKind::Flag: return "true or false";
        case SettingKind::Choice: return "one of its choices";
    }
    return "?";
}

}  // namespace

const std::vector<SettingSpec>& pipeline_settings_schema() {
    static const std::vector<SettingSpec> schema = make_schema();
    return schema;
}

const SettingSpec* find_setting(std::string_view name) {
    for (const auto& spec : pipeline_settings_schema())
        if (spec.name == name || (!spec.legacy_key.empty() && spec.legacy_key == name)) return &spec;
    return nullptr;
}

void check_setting_value(const SettingSpec& spec, const SettingValue& value) {
    const auto fail = [&](const std::string& rule) { throw std::invalid_argument(spec.name + " " + rule); };
    switch (spec.kind) {
        case SettingKind::Integer: {
            const auto* number = std::get_if<std::int64_t>(&value);
            if (!number) fail("must be " + std::string(kind_word(spec.kind)));
            if (static_cast<double>(*number) < spec.minimum || static_cast<double>(*number) > spec.maximum)
                fail("must be in " + range_text(spec) + " (got " + std::to_string(*number) + ")");
            return;
        }
        case SettingKind::Real: {
            const auto* number = std::get_if<double>(&value);
            if (!number) fail("must be " + std::string(kind_word(spec.kind)));
            if (!(*number >= spec.minimum && *number <= spec.maximum))
                fail("must be in " + range_text(spec) + " (got " + format_number(*number) + ")");
            return;
        }
        case SettingKind::Flag:
            if (!std::holds_alternative<bool>(value)) fail("must be true or false");
            return;
        case SettingKind::Choice: {
            const auto* text = std::get_if<std::string>(&value);
            if (!text) fail("must be one of " + choice_list(spec));
            for (const auto& entry : spec.choices)
                if (entry.name == *text) return;
            fail("must be one of " + choice_list(spec) + " (got '" + *text + "')");
        }
    }
}

std::string format_setting_value(const SettingSpec& spec, const SettingValue& value) {
    (void)spec;
    if (const auto* number = std::get_if<std::int64_t>(&value)) return std::to_string(*number);
    if (const auto* number = std::get_if<double>(&value)) return format_number(*number);
    if (const auto* on = std::get_if<bool>(&value)) return *on ? "true" : "false";
    return std::get<std::string>(value);
}

SettingValue parse_setting_value(const SettingSpec& spec, std::string_view text) {
    const auto fail = [&] {
        throw std::invalid_argument(spec.name + " must be " + kind_word(spec.kind) + " (got '" + std::string(text) + "')");
    };
    SettingValue value;
    switch (spec.kind) {
        case SettingKind::Integer: {
            std::int64_t number = 0;
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
            if (error != std::errc() || end != text.data() + text.size() || text.empty()) fail();
            value = number;
            break;
        }
        case SettingKind::Real: {
            const std::string copy(text);
            std::size_t used = 0;
            double number = 0.0;
            try {
                number = std::stod(copy, &used);
            } catch (const std::exception&) {
                fail();
            }
            if (used != copy.size()) fail();
            value = number;
            break;
        }
        case SettingKind::Flag:
            if (text == "true" || text == "1" || text == "yes" || text == "on") value = true;
            else if (text == "false" || text == "0" || text == "no" || text == "off") value = false;
            else fail();
            break;
        case SettingKind::Choice: value = std::string(text); break;
    }
    check_setting_value(spec, value);
    return value;
}

void set_setting(PipelineSettings& settings, const SettingSpec& spec, const SettingValue& value) {
    check_setting_value(spec, value);
    spec.set(settings, value);
}

void PipelineSettings::validate() const {
    const auto& schema = pipeline_settings_schema();
    for (const auto& spec : schema) {
        SettingValue value;
        try {
            value = spec.get(*this);
        } catch (const std::invalid_argument&) {
            throw std::invalid_argument(spec.name + " holds a value outside its choices");
        }
        check_setting_value(spec, value);
    }
    for (const auto& spec : schema) {
        if (spec.requires_switch.empty() || !std::get<bool>(spec.get(*this))) continue;
        const SettingSpec& needed = *find_setting(spec.requires_switch);
        if (!std::get<bool>(needed.get(*this)))
            throw std::invalid_argument(spec.name + " needs " + needed.name + " (" + spec.label + " needs the " +
                                        needed.label + ")");
    }
    if (max_counts_per_cell > 0.0 && max_counts_per_cell < min_counts_per_cell)
        throw std::invalid_argument("max_counts must be >= min_counts when set (got min_counts " +
                                    format_number(min_counts_per_cell) + ", max_counts " +
                                    format_number(max_counts_per_cell) + ")");
    if (max_genes_per_cell > 0 && max_genes_per_cell < min_genes_per_cell)
        throw std::invalid_argument("max_genes must be >= min_genes when set (got min_genes " +
                                    std::to_string(min_genes_per_cell) + ", max_genes " +
                                    std::to_string(max_genes_per_cell) + ")");
    if (umap.min_dist > umap.spread)
        throw std::invalid_argument("min_dist must be <= spread (got min_dist " + format_number(umap.min_dist) +
                                    ", spread " + format_number(umap.spread) + ")");
}

std::string settings_markdown_table() {
    const PipelineSettings defaults;
    std::ostringstream out;
    out << "| Setting | `fathom-cli run` | Default | Values | Meaning |\n";
    out << "|---|---|---|---|---|\n";
    for (const auto& spec : pipeline_settings_schema()) {
        std::string values;
        switch (spec.kind) {
            case SettingKind::Integer:
            case SettingKind::Real: values = range_text(spec); break;
            case SettingKind::Flag: values = "on / off"; break;
            case SettingKind::Choice: values = choice_list(spec); break;
        }
        std::string cli = spec.cli_flag.empty() ? "" : "`" + spec.cli_flag + "`";
        if (spec.cli_flag.empty()) {
            // Switched on by the value options that belong to it.
            for (const auto& other : pipeline_settings_schema())
                if (other.switch_name == spec.name && !other.cli_flag.empty()) {
                    cli = "by `" + other.cli_flag + "`";
                    break;
                }
        }
        out << "| `" << spec.name << "` | " << cli << " | " << format_setting_value(spec, spec.get(defaults)) << " | "
            << values << " | " << spec.help << " |\n";
    }
    return out.str();
}

}  // namespace fathom
