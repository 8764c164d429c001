#pragma once
/// Figure export of the embedding plot: PNG at a physical size and DPI (stored in the
/// PNG's pHYs chunk), SVG and PDF with vector axes, tick labels, axis labels, title and
/// legend (categorical) or colour bar (continuous), and the point layer as one embedded
/// raster image rendered off-screen at the chosen DPI (PlotView::renderLayerImage), so
/// a million cells never become a million vector elements.
///
/// The figure shows what the plot shows: the same world region (widened to the figure's
/// aspect), colours, theme, draw order, opacity, hidden categories and filtered cells;
/// points keep their size relative to the data (on-screen size scaled by the figure's
/// pixels per world unit over the screen's).
#include <QSizeF>
#include <QString>
#include <optional>

namespace fathom::ui {

class PlotView;

/// Output formats, chosen from the file name's extension.
enum class FigureFormat { Png, Svg, Pdf };

/// Size, resolution and text of an exported figure.
struct FigureOptions {
    double width_in = 5.0;    ///< page width in inches, in [0.5, 40]
    double height_in = 4.0;   ///< page height in inches, in [0.5, 40]
    int dpi = 300;            ///< pixels per inch of the PNG and of the point layer, in [36, 2400]
    QString title;            ///< empty = the colouring's name
    QString embedding;        ///< obsm key shown ("X_umap"); names the axes when the labels are empty
    QString x_label, y_label; ///< empty = from `embedding` (X_umap -> UMAP1 / UMAP2)
    bool legend = true;       ///< legend (categorical) or colour bar (continuous)
    /// Draw every cell in its colour, as if nothing were selected (the screen dims the
    /// cells outside a selection; by default the figure shows that highlight too).
    bool ignore_selection = false;
};

/// Empty when the options are usable; else the problem, naming the field
/// ("FigureOptions::dpi must be in [36, 2400], got 10").
QString validate(const FigureOptions& options);

/// The format of `path` from its extension (.png, .svg, .pdf; any case); nullopt otherwise.
std::optional<FigureFormat> figure_format_of(const QString& path);

/// Parses a figure size "WxH" with a unit suffix "in", "mm" or "cm" (e.g. "6x4in",
/// "180x120mm") into inches. nullopt with `error` set on a malformed or non-positive size.
std::optional<QSizeF> parse_figure_size(const QString& text, QString* error);

/// Axis names of an obsm key as scanpy labels them: X_umap -> ("UMAP1", "UMAP2"),
/// X_pca -> ("PC1", "PC2"), X_tsne -> ("tSNE1", "tSNE2"), other keys "<KEY>1", "<KEY>2".
std::pair<QString, QString> axis_labels_of(const QString& embedding);

/// Renders the plot's current view as a figure and writes it to `path` atomically (a
/// temporary file renamed into place; nothing is left at `path` on failure). The format
/// comes from the extension. False with `error` naming the file or the option at fault.
bool export_figure(PlotView& plot, const QString& path, const FigureOptions& options, QString* error);

}  // namespace fathom::ui
