#pragma once
/// A saved session: what to reopen (the dataset and the pipeline settings that produce
/// the results) and how it looked (colouring, view, filter, selections, user
/// annotations). Stored as JSON with a format version; plain data here, so that every
/// panel fills its own part and the window restores it.
#include <QString>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/engine/PipelineSettings.hpp"

namespace fathom::ui {

/// The plot's view (ViewTransform centre and zoom, and the drawing choices).
struct SessionView {
    std::string embedding;             ///< obsm key shown ("X_umap"); empty = the default choice
    bool has_transform = false;        ///< false = fit the data
    double center_x = 0.0, center_y = 0.0;  ///< world point at the plot's centre
    double pixels_per_unit = 1.0;      ///< zoom: screen pixels per world unit (> 0)
    bool auto_point_size = true;
    float point_size = 3.0f;           ///< pixels, when not automatic; in [1, 64]
    float opacity = 1.0f;              ///< in (0, 1]
    std::string theme = "dark";        ///< "dark" or "light"
    std::string density = "auto";      ///< "auto", "on" or "off"
    std::string draw_order = "file";   ///< "file", "random" or "value" (draw_order_name)
    std::uint64_t draw_order_seed = 0; ///< seed of the random order
    friend bool operator==(const SessionView&, const SessionView&) = default;
};

/// A marker-gene filter on the plot.
struct SessionFilter {
    std::string expression;            ///< e.g. "CD3E > 1 and not MS4A1 > 0"; empty = none
    std::string layer = "lognorm";     ///< value_layer_key(): "lognorm", "counts" (X as stored) or "raw" (raw/X)
    std::string mode = "hide";         ///< cells outside the filter: "hide" or "dim"
    friend bool operator==(const SessionFilter&, const SessionFilter&) = default;
};

/// A named set of cells (indices into the analysed cells, obs order).
struct SessionSelection {
    std::string name;
    std::vector<std::int64_t> cells;
    friend bool operator==(const SessionSelection&, const SessionSelection&) = default;
};

/// A user categorical obs column.
struct SessionAnnotation {
    std::string name;
    std::vector<std::string> categories;
    std::vector<std::int32_t> codes;   ///< one per analysed cell; -1 = missing
    std::vector<std::string> colors;   ///< "#rrggbb", one per category
    friend bool operator==(const SessionAnnotation&, const SessionAnnotation&) = default;
};

/// Everything a session file holds.
struct SessionState {
    static constexpr int k_version = 2;  ///< format version written; load accepts <= this

    std::string dataset;               ///< path of the dataset (or of an exported h5ad)
    bool has_results = false;          ///< the pipeline had run: reopening re-runs it
    PipelineSettings pipeline;         ///< settings of that run
    std::string color_by;              ///< obs column, "gene:NAME" or "" (uniform)
    SessionView view;
    SessionFilter filter;
    std::vector<SessionSelection> selections;
    std::vector<SessionAnnotation> annotations;
    friend bool operator==(const SessionState&, const SessionState&) = default;
};

/// A session file that cannot be read or is malformed. what() reads
/// "<file>: <key>: <problem>", e.g. "s.json: /view/opacity: expected a number, got string".
class SessionError : public std::runtime_error {
public:
    SessionError(const std::string& file, const std::string& key, const std::string& problem)
        : std::runtime_error(file + ": " + (key.empty() ? std::string() : key + ": ") + problem), m_key(key) {}
    /// JSON pointer of the offending key ("" for the whole file).
    const std::string& key() const noexcept { return m_key; }

private:
    std::string m_key;
};

/// Writes `state` as JSON to `path` atomically (temporary file, then rename). Throws
/// SessionError naming the file when it cannot be written (nothing is left at `path`).
void save_session(const SessionState& state, const QString& path);

/// Reads a session file. Throws SessionError naming the file and the key at fault: not
/// JSON (with the parser's position), a missing or mistyped key, a value out of range,
/// a newer version, selections or annotations that disagree with themselves. Keys that
/// are absent take the defaults above, except "version" and "dataset", which are required.
SessionState load_session(const QString& path);

}  // namespace fathom::ui
