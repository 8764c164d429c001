#include "ui/PlotModel.hpp"

#include <cmath>
#include <map>
#include <variant>

namespace fathom::ui {

namespace {

/// MaskStyle::Dim: how far a cell outside the mask fades towards the background.
constexpr float k_dim_amount = 0.8f;
/// While a selection exists, the other cells keep this share of their colour.
constexpr float k_unselected_keep = 0.25f;

}  // namespace

bool obs_column_categories(const Column& column, std::vector<std::int32_t>& codes, std::vector<std::string>& categories) {
    if (const auto* categorical = std::get_if<CategoricalColumn>(&column.data)) {
        codes = categorical->codes;
        categories = categorical->categories;
        return true;
    }
    if (const auto* flags = std::get_if<BoolColumn>(&column.data)) {
        codes.resize(flags->values.size());
        for (std::size_t row = 0; row < codes.size(); ++row)
            codes[row] = !flags->missing.empty() && flags->missing[row] ? -1 : flags->values[row] ? 1 : 0;
        categories = {"False", "True"};
        return true;
    }
    return false;
}

Coloring obs_column_coloring(const Column& column, const std::vector<std::string>* stored_colors, QString* error) {
    Coloring coloring;
    if (obs_column_categories(column, coloring.codes, coloring.categories)) {
        coloring.kind = Coloring::Kind::Categorical;
    } else if (const auto* strings = std::get_if<StringColumn>(&column.data)) {
        // pandas turns a string column into categories sorted lexicographically.
        std::map<std::string, std::int32_t> index;
        for (const std::string& value : strings->values) {
            index.emplace(value, 0);
            if (index.size() > k_max_plot_categories) {
                if (error)
                    *error = QStringLiteral("'%1' has more than %2 distinct values")
                                 .arg(QString::fromStdString(column.name))
                                 .arg(k_max_plot_categories);
                return {};
            }
        }
        for (auto& [value, code] : index) {
            code = static_cast<std::int32_t>(coloring.categories.size());
            coloring.categories.push_back(value);
        }
        coloring.codes.reserve(strings->values.size());
        for (const std::string& value : strings->values) coloring.codes.push_back(index[value]);
        coloring.kind = Coloring::Kind::Categorical;
    } else if (const auto* integers = std::get_if<IntColumn>(&column.data)) {
        coloring.values.resize(integers->values.size());
        for (std::size_t row = 0; row < coloring.values.size(); ++row)
            coloring.values[row] = !integers->missing.empty() && integers->missing[row]
                                       ? NAN
                                       : static_cast<float>(integers->values[row]);
        coloring.kind = Coloring::Kind::Continuous;
    } else if (const auto* numbers = std::get_if<FloatColumn>(&column.data)) {
        coloring.values.assign(numbers->values.begin(), numbers->values.end());
        coloring.kind = Coloring::Kind::Continuous;
    }
    if (coloring.kind == Coloring::Kind::Categorical)
        coloring.colors = category_colors(stored_colors, coloring.categories.size());
    return coloring;
}

PlotModel::PlotModel(QObject* parent) : QObject(parent), m_selection(std::make_shared<const CellSet>()) {}

// ---- cells ------------------------------------------------------------------------------

void PlotModel::setNumCells(std::int64_t num_cells) {
    num_cells = std::max<std::int64_t>(num_cells, 0);
    if (num_cells == m_num_cells) return;
    m_num_cells = num_cells;
    m_cell_mask.clear();
    m_selection = std::make_shared<const CellSet>();
    m_selected.clear();
    m_kind = ColorKind::Uniform;
    clearColoring();
    rebuild();
    emit orderKeysChanged();
}

std::int64_t PlotModel::numCells() const { return m_num_cells; }

// ---- colouring ----------------------------------------------------------------------------

void PlotModel::clearColoring() {
    m_name.clear();
    m_codes.clear();
    m_values.clear();
    m_categories.clear();
    m_category_colors.clear();
    m_category_visible.clear();
    m_category_counts.clear();
}

void PlotModel::setUniformColor(const Rgba8* color) {
    m_kind = ColorKind::Uniform;
    clearColoring();
    m_has_uniform_override = color != nullptr;
    if (color) m_uniform_override = *color;
    rebuild();
    emit orderKeysChanged();
}

void PlotModel::setCategorical(const QString& name, std::vector<std::int32_t> codes, std::vector<std::string> categories,
                               std::vector<Rgba8> colors) {
    codes.resize(static_cast<std::size_t>(m_num_cells), -1);
    colors.resize(categories.size(), k_missing_color);
    clearColoring();
    m_kind = ColorKind::Categorical;
    m_name = name;
    m_codes = std::move(codes);
    m_categories = std::move(categories);
    m_category_colors = std::move(colors);
    m_category_visible.assign(m_categories.size(), 1);
    m_category_counts.assign(m_categories.size(), 0);
    for (const std::int32_t code : m_codes)
        if (code >= 0 && static_cast<std::size_t>(code) < m_category_counts.size()) ++m_category_counts[code];
    rebuild();
    emit orderKeysChanged();
}

void PlotModel::setContinuous(const QString& name, std::vector<float> values, Colormap colormap) {
    values.resize(static_cast<std::size_t>(m_num_cells), NAN);
    clearColoring();
    m_kind = ColorKind::Continuous;
    m_name = name;
    m_values = std::move(values);
    m_colormap = colormap;
    const auto [low, high] = finite_range(m_values);
    m_data_low = m_range_low = low;
    m_data_high = m_range_high = high;
    rebuild();
    emit orderKeysChanged();
    emit valueRangeChanged(low, high);
}

void PlotModel::setColoring(const QString& name, Coloring coloring) {
    switch (coloring.kind) {
        case ColorKind::Uniform: setUniformColor(); break;
        case ColorKind::Categorical:
            setCategorical(name, std::move(coloring.codes), std::move(coloring.categories), std::move(coloring.colors));
            break;
        case ColorKind::Continuous: setContinuous(name, std::move(coloring.values), m_colormap); break;
    }
}

bool PlotModel::setObsColumn(const Column& column, const std::vector<std::string>* stored_colors, QString* error) {
    QString problem;
    Coloring coloring = obs_column_coloring(column, stored_colors, &problem);
    if (!problem.isEmpty() || coloring.kind == ColorKind::Uniform) {
        if (error) *error = problem.isEmpty() ? QStringLiteral("'%1' is no colouring").arg(QString::fromStdString(column.name)) : problem;
        return false;
    }
    setColoring(QString::fromStdString(column.name), std::move(coloring));
    return true;
}

PlotModel::ColorKind PlotModel::colorKind() const { return m_kind; }
QString PlotModel::colorName() const { return m_name; }
const std::vector<std::int32_t>& PlotModel::codes() const { return m_codes; }
const std::vector<std::string>& PlotModel::categories() const { return m_categories; }
const std::vector<Rgba8>& PlotModel::categoryColors() const { return m_category_colors; }
const std::vector<std::int64_t>& PlotModel::categoryCounts() const { return m_category_counts; }
const std::vector<float>& PlotModel::values() const { return m_values; }

void PlotModel::setValueRange(float low, float high) {
    if (std::isnan(low) || std::isnan(high)) return;
    if (high < low) std::swap(low, high);
    if (low == m_range_low && high == m_range_high) return;
    m_range_low = low;
    m_range_high = high;
    if (m_kind == ColorKind::Continuous) rebuild();
    emit valueRangeChanged(low, high);
}

void PlotModel::resetValueRange() { setValueRange(m_data_low, m_data_high); }
std::pair<float, float> PlotModel::valueRange() const { return {m_range_low, m_range_high}; }
std::pair<float, float> PlotModel::dataRange() const { return {m_data_low, m_data_high}; }

void PlotModel::setColormap(Colormap colormap) {
    if (colormap == m_colormap) return;
    m_colormap = colormap;
    if (m_kind == ColorKind::Continuous) rebuild();
    emit colormapChanged();
}

Colormap PlotModel::colormap() const { return m_colormap; }

void PlotModel::setCategoryVisible(int category, bool visible) {
    if (category < 0 || static_cast<std::size_t>(category) >= m_category_visible.size()) return;
    if ((m_category_visible[category] != 0) == visible) return;
    m_category_visible[category] = visible ? 1 : 0;
    rebuild();
    emit categoryVisibilityChanged(category, visible);
}

bool PlotModel::categoryVisible(int category) const {
    return category >= 0 && static_cast<std::size_t>(category) < m_category_visible.size() &&
           m_category_visible[category] != 0;
}

// ---- mask and selection ----------------------------------------------------------------------

void PlotModel::setCellMask(std::vector<std::uint8_t> mask) {
    if (!mask.empty()) mask.resize(static_cast<std::size_t>(m_num_cells), 0);
    m_cell_mask = std::move(mask);
    rebuild();
    if (m_mask_style == MaskStyle::Dim) emit orderKeysChanged();
}

const std::vector<std::uint8_t>& PlotModel::cellMask() const { return m_cell_mask; }

void PlotModel::setMaskStyle(MaskStyle style) {
    if (style == m_mask_style) return;
    m_mask_style = style;
    rebuild();
    emit orderKeysChanged();
}

PlotModel::MaskStyle PlotModel::maskStyle() const { return m_mask_style; }

void PlotModel::setSelection(SharedCellSet cells) {
    if (!cells) cells = std::make_shared<const CellSet>();
    const bool had = !m_selected.empty();
    m_selection = std::move(cells);
    if (m_selection->empty()) m_selected.clear();
    else m_selected = selection_mask(*m_selection, m_num_cells);
    if (!had && m_selected.empty()) return;
    rebuild();
    emit orderKeysChanged();
}

SharedCellSet PlotModel::selection() const { return m_selection; }
const std::vector<std::uint8_t>& PlotModel::selectedFlags() const { return m_selected; }

// ---- palette and value layer --------------------------------------------------------------------

void PlotModel::setPalette(Rgba8 background, Rgba8 uniform_color) {
    if (background == m_background && uniform_color == m_uniform) return;
    m_background = background;
    m_uniform = uniform_color;
    if ((m_kind == ColorKind::Uniform && !m_has_uniform_override) || !m_selected.empty() ||
        (m_mask_style == MaskStyle::Dim && !m_cell_mask.empty()))
        rebuild();
    emit paletteChanged();
}

Rgba8 PlotModel::background() const { return m_background; }

void PlotModel::setValueLayer(ValueLayer layer) {
    if (layer == m_layer) return;
    m_layer = layer;
    emit valueLayerChanged(layer);
}

ValueLayer PlotModel::valueLayer() const { return m_layer; }

// ---- attributes ----------------------------------------------------------------------------------

const std::vector<PointAttribute>& PlotModel::attributes() const { return m_attributes; }
std::int64_t PlotModel::visibleCount() const { return m_visible; }

std::vector<float> PlotModel::orderKeys() const {
    if (m_kind == ColorKind::Continuous) return m_values;
    if (m_kind == ColorKind::Categorical) return {m_codes.begin(), m_codes.end()};
    return {};
}

void PlotModel::rebuild() {
    m_attributes.resize(static_cast<std::size_t>(m_num_cells));
    // Dim: every cell is coloured, then the ones outside the mask are faded.
    const bool dim = m_mask_style == MaskStyle::Dim;
    const std::span<const std::uint8_t> mask = dim ? std::span<const std::uint8_t>() : std::span(m_cell_mask);
    switch (m_kind) {
        case ColorKind::Uniform:
            m_visible = fill_uniform_attributes(m_has_uniform_override ? m_uniform_override : m_uniform, mask, m_attributes);
            break;
        case ColorKind::Categorical:
            m_visible = fill_categorical_attributes(m_codes, m_category_colors, m_category_visible, mask, m_attributes);
            break;
        case ColorKind::Continuous:
            m_visible = fill_continuous_attributes(m_values, m_colormap, m_range_low, m_range_high, mask, m_attributes);
            break;
    }
    if (dim) dim_masked_attributes(m_cell_mask, m_background, k_dim_amount, m_attributes);
    if (!m_selected.empty()) dim_unselected(m_selected, m_background, k_unselected_keep, m_attributes);
    emit attributesChanged();
}

}  // namespace fathom::ui
