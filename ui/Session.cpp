#include "ui/Session.hpp"

#include <QFile>
#include <QSaveFile>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <variant>

#include "core/engine/settings_schema.hpp"

namespace fathom::ui {

namespace {

using nlohmann::json;

const std::set<std::string> k_themes{"dark", "light"};
const std::set<std::string> k_density_modes{"auto", "on", "off"};
const std::set<std::string> k_draw_orders{"file", "random", "value"};
const std::set<std::string> k_layers{"lognorm", "counts", "raw"};
const std::set<std::string> k_filter_modes{"hide", "dim"};

/// The pipeline settings by their schema names (settings_schema.hpp).
json to_json(const PipelineSettings& settings) {
    json out = json::object();
    for (const auto& spec : pipeline_settings_schema())
        out[spec.name] = std::visit([](const auto& value) { return json(value); }, spec.get(settings));
    return out;
}

/// Reads typed values out of the parsed document, naming the key (a JSON pointer) in
/// every error.
class Reader {
public:
    explicit Reader(std::string file) : m_file(std::move(file)) {}

    [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
        throw SessionError(m_file, key, problem);
    }

    const json& object(const json& parent, const std::string& pointer, const char* key, bool required) const {
        static const json empty = json::object();
        const std::string where = pointer + "/" + key;
        const auto it = parent.find(key);
        if (it == parent.end()) {
            if (required) fail(where, "missing");
            return empty;
        }
        if (!it->is_object()) fail(where, std::string("expected an object, got ") + it->type_name());
        return *it;
    }

    const json* array(const json& parent, const std::string& pointer, const char* key) const {
        const auto it = parent.find(key);
        if (it == parent.end()) return nullptr;
        if (!it->is_array()) fail(pointer + "/" + key, std::string("expected an array, got ") + it->type_name());
        return &*it;
    }

    template <typename T>
    void read(const json& parent, const std::string& pointer, const char* key, T& out, bool required = false) const {
        const std::string where = pointer + "/" + key;
        const auto it = parent.find(key);
        if (it == parent.end()) {
            if (required) fail(where, "missing");
            return;
        }
        out = value<T>(*it, where);
    }

    template <typename T>
    T value(const json& node, const std::string& where) const {
        if constexpr (std::is_same_v<T, bool>) {
            if (!node.is_boolean()) fail(where, std::string("expected true or false, got ") + node.type_name());
            return node.get<bool>();
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!node.is_string()) fail(where, std::string("expected a string, got ") + node.type_name());
            return node.get<std::string>();
        } else if constexpr (std::is_integral_v<T>) {
            if (!node.is_number_integer()) fail(where, std::string("expected an integer, got ") + node.type_name());
            if constexpr (std::is_unsigned_v<T>) {
                if (!node.is_number_unsigned()) fail(where, "expected an integer >= 0");
                const auto number = node.get<std::uint64_t>();
                if (number > std::numeric_limits<T>::max()) fail(where, "integer out of range");
                return static_cast<T>(number);
            } else {
                if (node.is_number_unsigned() && node.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
                    fail(where, "integer out of range");
                const auto number = node.get<std::int64_t>();
                if (number < std::numeric_limits<T>::min() || number > std::numeric_limits<T>::max())
                    fail(where, "integer out of range");
                return static_cast<T>(number);
            }
        } else {
            static_assert(std::is_floating_point_v<T>);
            if (!node.is_number()) fail(where, std::string("expected a number, got ") + node.type_name());
            return static_cast<T>(node.get<double>());
        }
    }

    void one_of(const std::string& where, const std::string& value, const std::set<std::string>& allowed) const {
        if (allowed.count(value)) return;
        std::string list;
        for (const auto& entry : allowed) list += (list.empty() ? "" : ", ") + entry;
        fail(where, "'" + value + "' is not one of " + list);
    }

private:
    std::string m_file;
};

}  // namespace

void save_session(const SessionState& state, const QString& path) {
    const std::string file = path.toStdString();
    json document;
    document["format"] = "fathom-session";
    document["version"] = SessionState::k_version;
    document["dataset"] = state.dataset;
    document["has_results"] = state.has_results;
    document["pipeline"] = to_json(state.pipeline);
    document["color_by"] = state.color_by;
    const SessionView& view = state.view;
    document["view"] = {{"embedding", view.embedding},
                        {"has_transform", view.has_transform},
                        {"center", {view.center_x, view.center_y}},
                        {"pixels_per_unit", view.pixels_per_unit},
                        {"auto_point_size", view.auto_point_size},
                        {"point_size", view.point_size},
                        {"opacity", view.opacity},
                        {"theme", view.theme},
                        {"density", view.density},
                        {"draw_order", view.draw_order},
                        {"draw_order_seed", view.draw_order_seed}};
    document["filter"] = {{"expression", state.filter.expression}, {"layer", state.filter.layer}, {"mode", state.filter.mode}};
    document["selections"] = json::array();
    for (const auto& selection : state.selections)
        document["selections"].push_back({{"name", selection.name}, {"cells", selection.cells}});
    document["annotations"] = json::array();
    for (const auto& annotation : state.annotations)
        document["annotations"].push_back({{"name", annotation.name},
                                           {"categories", annotation.categories},
                                           {"codes", annotation.codes},
                                           {"colors", annotation.colors}});
    std::string text;
    try {
        text = document.dump(1, ' ', false, json::error_handler_t::strict);
    } catch (const json::exception& error) {
        throw SessionError(file, "", std::string("cannot encode: ") + error.what());
    }
    text += "\n";

    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly)) throw SessionError(file, "", "cannot create: " + out.errorString().toStdString());
    if (out.write(text.data(), static_cast<qint64>(text.size())) != static_cast<qint64>(text.size())) {
        const std::string reason = out.errorString().toStdString();
        out.cancelWriting();
        throw SessionError(file, "", "write failed: " + reason);
    }
    if (!out.commit()) throw SessionError(file, "", "cannot write: " + out.errorString().toStdString());
}

SessionState load_session(const QString& path) {
    const std::string file = path.toStdString();
    QFile in(path);
    if (!in.open(QIODevice::ReadOnly)) throw SessionError(file, "", "cannot open: " + in.errorString().toStdString());
    const QByteArray bytes = in.readAll();
    json document;
    try {
        document = json::parse(bytes.constBegin(), bytes.constEnd());
    } catch (const json::parse_error& error) {
        throw SessionError(file, "", std::string("not valid JSON: ") + error.what());
    }
    const Reader reader(file);
    if (!document.is_object()) reader.fail("", std::string("expected a JSON object, got ") + document.type_name());

    SessionState state;
    int version = 0;
    reader.read(document, "", "version", version, true);
    if (version < 1 || version > SessionState::k_version)
        reader.fail("/version", "version " + std::to_string(version) + " is not supported (this build reads 1 to " +
                                    std::to_string(SessionState::k_version) + ")");
    reader.read(document, "", "dataset", state.dataset, true);
    if (state.dataset.empty()) reader.fail("/dataset", "empty path");
    reader.read(document, "", "has_results", state.has_results);
    reader.read(document, "", "color_by", state.color_by);

    const json& pipeline = reader.object(document, "", "pipeline", false);
    PipelineSettings& settings = state.pipeline;
    for (const auto& [key, node] : pipeline.items()) {
        const std::string where = "/pipeline/" + key;
        const SettingSpec* spec = find_setting(key);
        if (!spec) reader.fail(where, "unknown setting");
        if (version == 1 && key == "markers" && node.is_string() && node.get<std::string>().empty()) {
            settings.run_markers = false;  // version 1 wrote "" for "no markers"
            continue;
        }
        SettingValue value;
        switch (spec->kind) {
            case SettingKind::Integer: value = reader.value<std::int64_t>(node, where); break;
            case SettingKind::Real: value = reader.value<double>(node, where); break;
            case SettingKind::Flag: value = reader.value<bool>(node, where); break;
            case SettingKind::Choice: value = reader.value<std::string>(node, where); break;
        }
        try {
            set_setting(settings, *spec, value);
        } catch (const std::invalid_argument& error) {
            reader.fail(where, error.what());
        }
    }
    try {
        settings.validate();
    } catch (const std::invalid_argument& error) {
        reader.fail("/pipeline", error.what());
    }

    const json& view_node = reader.object(document, "", "view", false);
    SessionView& view = state.view;
    reader.read(view_node, "/view", "embedding", view.embedding);
    reader.read(view_node, "/view", "has_transform", view.has_transform);
    if (const json* center = reader.array(view_node, "/view", "center")) {
        if (center->size() != 2) reader.fail("/view/center", "expected [x, y], got " + std::to_string(center->size()) + " values");
        view.center_x = reader.value<double>((*center)[0], "/view/center/0");
        view.center_y = reader.value<double>((*center)[1], "/view/center/1");
    }
    reader.read(view_node, "/view", "pixels_per_unit", view.pixels_per_unit);
    if (!(view.pixels_per_unit > 0.0)) reader.fail("/view/pixels_per_unit", "must be > 0");
    reader.read(view_node, "/view", "auto_point_size", view.auto_point_size);
    reader.read(view_node, "/view", "point_size", view.point_size);
    if (!(view.point_size >= 1.0f && view.point_size <= 64.0f)) reader.fail("/view/point_size", "must be in [1, 64]");
    reader.read(view_node, "/view", "opacity", view.opacity);
    if (!(view.opacity > 0.0f && view.opacity <= 1.0f)) reader.fail("/view/opacity", "must be in (0, 1]");
    reader.read(view_node, "/view", "theme", view.theme);
    reader.one_of("/view/theme", view.theme, k_themes);
    reader.read(view_node, "/view", "density", view.density);
    reader.one_of("/view/density", view.density, k_density_modes);
    reader.read(view_node, "/view", "draw_order", view.draw_order);
    reader.one_of("/view/draw_order", view.draw_order, k_draw_orders);
    reader.read(view_node, "/view", "draw_order_seed", view.draw_order_seed);

    const json& filter = reader.object(document, "", "filter", false);
    reader.read(filter, "/filter", "expression", state.filter.expression);
    reader.read(filter, "/filter", "layer", state.filter.layer);
    reader.one_of("/filter/layer", state.filter.layer, k_layers);
    reader.read(filter, "/filter", "mode", state.filter.mode);
    reader.one_of("/filter/mode", state.filter.mode, k_filter_modes);

    if (const json* selections = reader.array(document, "", "selections")) {
        std::set<std::string> names;
        for (std::size_t index = 0; index < selections->size(); ++index) {
            const std::string where = "/selections/" + std::to_string(index);
            const json& node = (*selections)[index];
            if (!node.is_object()) reader.fail(where, std::string("expected an object, got ") + node.type_name());
            SessionSelection selection;
            reader.read(node, where, "name", selection.name, true);
            if (!names.insert(selection.name).second) reader.fail(where + "/name", "duplicate selection '" + selection.name + "'");
            const json* cells = reader.array(node, where, "cells");
            if (!cells) reader.fail(where + "/cells", "missing");
            selection.cells.reserve(cells->size());
            for (std::size_t cell = 0; cell < cells->size(); ++cell) {
                const auto value = reader.value<std::int64_t>((*cells)[cell], where + "/cells/" + std::to_string(cell));
                if (value < 0) reader.fail(where + "/cells/" + std::to_string(cell), "negative cell index");
                selection.cells.push_back(value);
            }
            state.selections.push_back(std::move(selection));
        }
    }

    if (const json* annotations = reader.array(document, "", "annotations")) {
        std::set<std::string> names;
        for (std::size_t index = 0; index < annotations->size(); ++index) {
            const std::string where = "/annotations/" + std::to_string(index);
            const json& node = (*annotations)[index];
            if (!node.is_object()) reader.fail(where, std::string("expected an object, got ") + node.type_name());
            SessionAnnotation annotation;
            reader.read(node, where, "name", annotation.name, true);
            if (annotation.name.empty()) reader.fail(where + "/name", "empty name");
            if (!names.insert(annotation.name).second)
                reader.fail(where + "/name", "duplicate annotation '" + annotation.name + "'");
            const auto strings = [&](const char* key, std::vector<std::string>& out) {
                const json* values = reader.array(node, where, key);
                if (!values) reader.fail(where + "/" + key, "missing");
                for (std::size_t entry = 0; entry < values->size(); ++entry)
                    out.push_back(reader.value<std::string>((*values)[entry], where + "/" + key + "/" + std::to_string(entry)));
            };
            strings("categories", annotation.categories);
            std::set<std::string> unique(annotation.categories.begin(), annotation.categories.end());
            if (unique.size() != annotation.categories.size()) reader.fail(where + "/categories", "categories are not unique");
            strings("colors", annotation.colors);
            if (annotation.colors.size() != annotation.categories.size())
                reader.fail(where + "/colors", std::to_string(annotation.colors.size()) + " colours for " +
                                                   std::to_string(annotation.categories.size()) + " categories");
            const json* codes = reader.array(node, where, "codes");
            if (!codes) reader.fail(where + "/codes", "missing");
            const auto num_categories = static_cast<std::int32_t>(annotation.categories.size());
            annotation.codes.reserve(codes->size());
            for (std::size_t cell = 0; cell < codes->size(); ++cell) {
                const std::string at = where + "/codes/" + std::to_string(cell);
                const auto code = reader.value<std::int32_t>((*codes)[cell], at);
                if (code < -1 || code >= num_categories)
                    reader.fail(at, "code " + std::to_string(code) + " outside [-1, " + std::to_string(num_categories) + ")");
                annotation.codes.push_back(code);
            }
            state.annotations.push_back(std::move(annotation));
        }
    }
    return state;
}

}  // namespace fathom::ui
