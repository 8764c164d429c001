#pragma once
/// What each cell of the embedding shows, apart from where it is: the colouring (one
/// colour, categories with their colours and legend toggles, or continuous values with a
/// range and a colour map), the cell mask and how it shows, the selection, and the value
/// layer that gene (and gene-set) colourings read. No GL: the 2-D plot (PlotView) and the
/// 3-D view observe one model and draw the per-cell attributes it computes.
///
/// Every setter recomputes the attributes (one per cell: RGBA8 colour, alpha 0 = hidden,
/// and the value scaled to [0, 1]) and emits attributesChanged(); a setter that changes
/// what a by-value draw order or the selected-last order would sort by (colouring, mask
/// style, mask under Dim, selection) also emits orderKeysChanged().
#include <QObject>
#include <QString>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/Table.hpp"
#include "core/engine/Engine.hpp"
#include "ui/CellSelection.hpp"
#include "ui/ColorMaps.hpp"
#include "ui/PlotColoring.hpp"

namespace fathom::ui {

/// A colouring as values, before it is applied to a model.
struct Coloring {
    enum class Kind { Uniform, Categorical, Continuous };
    Kind kind = Kind::Uniform;
    std::vector<std::int32_t> codes;      ///< Categorical: one per cell, -1 = missing
    std::vector<std::string> categories;  ///< Categorical
    std::vector<Rgba8> colors;            ///< Categorical: one per category
    std::vector<float> values;            ///< Continuous: one per cell, NaN = missing
};

/// Beyond this many distinct values a string column is not a colouring.
inline constexpr std::size_t k_max_plot_categories = 1000;

/// The colouring of an obs column, as Scanpy's plots show it: a categorical column by its
/// categories (colours from `stored_colors`, the file's uns['<key>_colors'], else the
/// default palette); a bool column as the categories False, True; a string column as
/// categories sorted lexicographically (pandas' conversion; more than
/// k_max_plot_categories distinct values is an error); an int or float column as
/// continuous values (missing = NaN). On failure returns a uniform colouring and sets
/// `error`.
Coloring obs_column_coloring(const Column& column, const std::vector<std::string>* stored_colors,
                             QString* error = nullptr);

/// The category codes of a categorical or bool column (bool: False 0, True 1, missing
/// -1) with its category names; false for any other column.
bool obs_column_categories(const Column& column, std::vector<std::int32_t>& codes, std::vector<std::string>& categories);

/// Per-cell colouring state shared by the plot views. All methods are for the GUI thread.
class PlotModel : public QObject {
    Q_OBJECT
public:
    using ColorKind = Coloring::Kind;
    /// What the cell mask does to the cells outside it: hide them, or draw them faded
    /// towards the background and beneath the matching ones.
    enum class MaskStyle { Hide, Dim };

    explicit PlotModel(QObject* parent = nullptr);

    // ---- cells ----------------------------------------------------------------------
    /// The number of cells. A different number resets the colouring to uniform and clears
    /// the mask and the selection (nothing indexed by cells survives); the same number
    /// keeps everything.
    void setNumCells(std::int64_t num_cells);
    std::int64_t numCells() const;

    // ---- colouring ------------------------------------------------------------------
    /// One colour for every cell (the palette's default when `color` is null).
    void setUniformColor(const Rgba8* color = nullptr);
    /// Colour by categories: codes[cell] indexes `categories` (-1 = missing); one colour
    /// per category. Every category starts visible.
    void setCategorical(const QString& name, std::vector<std::int32_t> codes, std::vector<std::string> categories,
                        std::vector<Rgba8> colors);
    /// Colour by a continuous value (NaN = missing); the range starts at the finite
    /// minimum and maximum.
    void setContinuous(const QString& name, std::vector<float> values, Colormap colormap = Colormap::Viridis);
    /// Applies a colouring made by obs_column_coloring() (or by hand) under `name`.
    void setColoring(const QString& name, Coloring coloring);
    /// Colours by an obs column (obs_column_coloring); false with `error` set when the
    /// column is no colouring, leaving the model as it was.
    bool setObsColumn(const Column& column, const std::vector<std::string>* stored_colors, QString* error = nullptr);
    ColorKind colorKind() const;
    QString colorName() const;
    const std::vector<std::int32_t>& codes() const;
    const std::vector<std::string>& categories() const;
    const std::vector<Rgba8>& categoryColors() const;
    /// Cells per category (missing codes counted nowhere).
    const std::vector<std::int64_t>& categoryCounts() const;
    const std::vector<float>& values() const;
    /// Colour range of continuous colouring (values outside are clamped).
    void setValueRange(float low, float high);
    void resetValueRange();
    std::pair<float, float> valueRange() const;
    std::pair<float, float> dataRange() const;
    void setColormap(Colormap colormap);
    Colormap colormap() const;
    /// Legend toggle: hides or shows the cells of one category.
    void setCategoryVisible(int category, bool visible);
    bool categoryVisible(int category) const;

    // ---- mask and selection -----------------------------------------------------------
    /// Shows only cells with mask[cell] != 0 (e.g. a marker-gene filter); empty = all.
    void setCellMask(std::vector<std::uint8_t> mask);
    const std::vector<std::uint8_t>& cellMask() const;
    void setMaskStyle(MaskStyle style);
    MaskStyle maskStyle() const;
    /// Highlights `cells` (the other cells dimmed); null or empty = none.
    void setSelection(SharedCellSet cells);
    /// The highlighted cells (never null).
    SharedCellSet selection() const;
    /// One flag per cell while a selection exists, else empty.
    const std::vector<std::uint8_t>& selectedFlags() const;

    // ---- palette ----------------------------------------------------------------------
    /// The background the dimmed cells fade towards and the uniform colour by default
    /// (the plot's theme sets both).
    void setPalette(Rgba8 background, Rgba8 uniform_color);
    Rgba8 background() const;

    // ---- value layer ------------------------------------------------------------------
    /// Which values gene colourings, gene-set scores and filter rules read: X as stored,
    /// raw/X or log-normalised counts. The views do not recolour themselves: whoever
    /// computes gene values observes valueLayerChanged() and sets the new values.
    void setValueLayer(ValueLayer layer);
    ValueLayer valueLayer() const;

    // ---- what the views draw --------------------------------------------------------------
    /// Per-cell colour and scaled value (alpha 0 = hidden by category or mask).
    const std::vector<PointAttribute>& attributes() const;
    /// Cells drawn (not hidden by category or mask).
    std::int64_t visibleCount() const;
    /// What a by-value draw order sorts by: the values (continuous), the codes
    /// (categorical), else empty.
    std::vector<float> orderKeys() const;

signals:
    /// The per-cell attributes changed (colouring, range, legend toggle, mask, selection, palette).
    void attributesChanged();
    /// The colouring, the mask under MaskStyle::Dim or the selection changed: a draw order
    /// that depends on them must be rebuilt.
    void orderKeysChanged();
    /// The colour range changed.
    void valueRangeChanged(float low, float high);
    /// A legend toggle changed a category's visibility.
    void categoryVisibilityChanged(int category, bool visible);
    /// The colour map changed.
    void colormapChanged();
    /// The palette changed (theme).
    void paletteChanged();
    /// The value layer changed.
    void valueLayerChanged(fathom::ValueLayer layer);

private:
    void clearColoring();
    void rebuild();

    std::int64_t m_num_cells = 0;
    ColorKind m_kind = ColorKind::Uniform;
    QString m_name;
    bool m_has_uniform_override = false;
    Rgba8 m_uniform_override;
    std::vector<std::int32_t> m_codes;
    std::vector<std::string> m_categories;
    std::vector<Rgba8> m_category_colors;
    std::vector<std::uint8_t> m_category_visible;
    std::vector<std::int64_t> m_category_counts;
    std::vector<float> m_values;
    float m_data_low = 0.0f, m_data_high = 0.0f, m_range_low = 0.0f, m_range_high = 0.0f;
    Colormap m_colormap = Colormap::Viridis;
    std::vector<std::uint8_t> m_cell_mask;
    MaskStyle m_mask_style = MaskStyle::Hide;
    SharedCellSet m_selection;
    std::vector<std::uint8_t> m_selected;
    Rgba8 m_background{27, 29, 34, 255};
    Rgba8 m_uniform{150, 170, 200, 255};
    ValueLayer m_layer = ValueLayer::LogNorm;
    std::vector<PointAttribute> m_attributes;
    std::int64_t m_visible = 0;
};

}  // namespace fathom::ui
