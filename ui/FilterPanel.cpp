#include "ui/FilterPanel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QTimer>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpression>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <set>

#include "core/data/GeneLookup.hpp"
#include "ui/FilterHistogram.hpp"
#include "ui/GeneSearch.hpp"
#include "ui/JobWatcher.hpp"

namespace fathom::ui {

namespace {

/// Polling interval of the panel's jobs: a re-evaluation takes a few ms, so the mask
/// should not wait for the window's slower progress poll.
constexpr int k_poll_ms = 5;
/// Brushed thresholds are rounded to this many decimals (readable text, stable undo).
constexpr double k_brush_scale = 1e4;

const RuleOp k_ops[] = {RuleOp::Greater, RuleOp::GreaterEqual, RuleOp::Less,
                        RuleOp::LessEqual, RuleOp::Equal,        RuleOp::Between};

QString number_text(std::int64_t value) {
    return QLocale(QLocale::English).toString(static_cast<qlonglong>(value));
}

float brush_round(float value) {
    return static_cast<float>(std::round(static_cast<double>(value) * k_brush_scale) / k_brush_scale);
}

}  // namespace

struct FilterPanel::Private {
    EngineAccess engine;
    PlotView* plot = nullptr;
    std::shared_ptr<const AnalysisSnapshot> snapshot = std::make_shared<AnalysisSnapshot>();
    std::uint64_t generation = 0;  ///< increases with every snapshot (drops stale values)
    QString color_key;
    std::vector<std::string> names, ids;

    FilterState state;
    FilterRulesParse parsed;  ///< of state.expression, genes unchecked

    // ---- widgets ----
    GeneSearchModel* search_model = nullptr;
    QLineEdit* search = nullptr;
    QWidget* rows_box = nullptr;
    QVBoxLayout* rows_layout = nullptr;
    QLabel* rows_note = nullptr;
    struct Row {
        QWidget* widget = nullptr;
        QComboBox* join = nullptr;
        QCheckBox* negated = nullptr;
        QLineEdit* gene = nullptr;
        QComboBox* op = nullptr;
        QDoubleSpinBox* value = nullptr;
        QDoubleSpinBox* upper = nullptr;
        FilterHistogram* histogram = nullptr;
    };
    std::vector<Row> rows;
    QLineEdit* text = nullptr;
    QLabel* error = nullptr;
    QLabel* layer_note = nullptr;  ///< the layer the filter compares (the window's switch)
    QComboBox* style = nullptr;
    QLabel* count = nullptr;
    QTableWidget* table = nullptr;
    QLabel* gene_set_label = nullptr;
    QComboBox* gene_set_kind = nullptr;
    QPushButton* gene_set_color = nullptr;
    bool updating = false;

    // ---- jobs and results ----
    JobWatcher* watcher = nullptr;
    std::uint64_t filter_request = 0;
    std::uint64_t set_request = 0;
    std::int64_t matching = -1;
    std::shared_ptr<const std::vector<std::uint8_t>> mask;
    std::vector<std::pair<std::string, std::int64_t>> breakdown;
    std::vector<std::int64_t> totals;
    QString group_by;
    /// Fetched values per (gene, layer), obs order, for the histograms.
    std::map<std::pair<std::string, int>, std::shared_ptr<const std::vector<float>>> values;
    std::set<std::pair<std::string, int>> fetching;
    QStringList gene_set;
    QString gene_set_status;
    QString set_colored_label;  // the plot's colour name while it shows the gene set
    bool set_scored = false;    // that colouring is score_genes, not the mean

    /// What `gene` names in this dataset (GeneLookup: var names, then gene ids).
    GeneResolution resolve(const std::string& gene) const { return GeneLookup(names, ids).resolve(gene); }
    /// Why `gene` names no single column of this dataset; empty when it does, or when no
    /// dataset is shown (the engine checks again).
    QString gene_problem(const std::string& gene) const {
        return names.empty() ? QString() : QString::fromStdString(GeneLookup(names, ids).problem(gene));
    }
    Engine* current_engine() const { return engine ? engine() : nullptr; }
};

FilterPanel::FilterPanel(EngineAccess engine, PlotView* plot, QWidget* parent)
    : QWidget(parent), d(std::make_unique<Private>()) {
    qRegisterMetaType<fathom::ui::FilterState>();
    d->engine = std::move(engine);
    d->plot = plot;
    d->watcher = new JobWatcher(this, k_poll_ms);
    buildUi();
    // The Values switch lives in the plot's model: rules compare, and a gene-set colouring
    // is recomputed, in the layer it names.
    d->state.layer = plot->model()->valueLayer();
    connect(plot->model(), &PlotModel::valueLayerChanged, this, [this](ValueLayer layer) {
        setValueLayer(layer);
        if (!d->set_colored_label.isEmpty() && d->plot->colorName() == d->set_colored_label) colorByGeneSet(d->set_scored);
    });
    apply();
}

FilterPanel::~FilterPanel() { d->watcher->cancelAll(); }

void FilterPanel::buildUi() {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    // Gene search: adds a rule.
    auto* search_row = new QHBoxLayout;
    d->search = new QLineEdit(this);
    d->search->setObjectName(QStringLiteral("filterGeneSearch"));
    d->search->setPlaceholderText(tr("add a rule: gene name or id"));
    d->search->setClearButtonEnabled(true);
    d->search_model = new GeneSearchModel(this);
    QCompleter* completer = attach_gene_search(d->search, d->search_model);
    auto* add = new QPushButton(tr("Add"), this);
    search_row->addWidget(d->search, 1);
    search_row->addWidget(add);
    layout->addLayout(search_row);
    const auto add_searched = [this] {
        const QString gene = d->search->text().trimmed();
        if (gene.isEmpty()) return;
        if (addRule(gene)) d->search->clear();
    };
    connect(add, &QPushButton::clicked, this, add_searched);
    connect(d->search, &QLineEdit::returnPressed, this, add_searched);
    // Clicking a suggestion adds its rule at once (Enter on it too, through returnPressed;
    // addRule refuses the same rule twice).
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& gene) {
        if (addRule(gene)) QTimer::singleShot(0, d->search, &QLineEdit::clear);
    });

    // Rule rows.
    d->rows_box = new QWidget(this);
    d->rows_layout = new QVBoxLayout(d->rows_box);
    d->rows_layout->setContentsMargins(0, 0, 0, 0);
    d->rows_layout->setSpacing(2);
    layout->addWidget(d->rows_box);
    d->rows_note = new QLabel(this);
    d->rows_note->setWordWrap(true);
    d->rows_note->setText(tr("This expression groups its rules with parentheses that rule rows cannot show; "
                             "edit it as text."));
    d->rows_note->hide();
    layout->addWidget(d->rows_note);

    // The text form and its mistakes.
    auto* text_row = new QHBoxLayout;
    text_row->addWidget(new QLabel(tr("Text"), this));
    d->text = new QLineEdit(this);
    d->text->setObjectName(QStringLiteral("filterText"));
    d->text->setPlaceholderText(tr("e.g. CD3E > 1 and not MS4A1 > 0"));
    d->text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    text_row->addWidget(d->text, 1);
    layout->addLayout(text_row);
    connect(d->text, &QLineEdit::returnPressed, this, [this] { setExpressionText(d->text->text()); });
    d->error = new QLabel(this);
    d->error->setObjectName(QStringLiteral("filterError"));
    d->error->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    d->error->setStyleSheet(QStringLiteral("color: #c0392b;"));
    d->error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    d->error->setWordWrap(true);  // a long message stays inside the dock
    d->error->hide();
    layout->addWidget(d->error);

    // Options.
    auto* options = new QHBoxLayout;
    d->style = new QComboBox(this);
    d->style->addItem(tr("hide others"), static_cast<int>(PlotView::MaskStyle::Hide));
    d->style->addItem(tr("dim others"), static_cast<int>(PlotView::MaskStyle::Dim));
    auto* clear = new QPushButton(tr("Clear"), this);
    d->layer_note = new QLabel(this);
    d->layer_note->setObjectName(QStringLiteral("filterLayer"));
    d->layer_note->setToolTip(tr("The values the filter compares: the window's Values switch (toolbar)"));
    options->addWidget(d->layer_note);
    options->addWidget(d->style);
    options->addStretch(1);
    options->addWidget(clear);
    layout->addLayout(options);
    connect(d->style, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (d->updating || index < 0) return;
        FilterState after = d->state;
        after.style = static_cast<PlotView::MaskStyle>(d->style->itemData(index).toInt());
        commit(after);
    });
    connect(clear, &QPushButton::clicked, this, [this] {
        FilterState after = d->state;
        after.expression.clear();
        commit(after);
    });

    // Results.
    d->count = new QLabel(this);
    d->count->setObjectName(QStringLiteral("filterCount"));
    layout->addWidget(d->count);
    d->table = new QTableWidget(0, 4, this);
    d->table->setHorizontalHeaderLabels({tr("group"), tr("match"), tr("cells"), tr("%")});
    d->table->verticalHeader()->hide();
    d->table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    d->table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    d->table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    d->table->setMinimumHeight(120);
    layout->addWidget(d->table, 1);

    // Gene sets.
    auto* sets = new QGroupBox(tr("Gene set"), this);
    auto* sets_layout = new QVBoxLayout(sets);
    auto* load = new QPushButton(tr("Load gene list..."), sets);
    d->gene_set_label = new QLabel(tr("no gene set"), sets);
    d->gene_set_label->setWordWrap(true);
    auto* set_row = new QHBoxLayout;
    d->gene_set_kind = new QComboBox(sets);
    d->gene_set_kind->addItem(tr("mean"));
    d->gene_set_kind->addItem(tr("score (score_genes)"));
    d->gene_set_color = new QPushButton(tr("Colour plot"), sets);
    d->gene_set_color->setEnabled(false);
    set_row->addWidget(d->gene_set_kind, 1);
    set_row->addWidget(d->gene_set_color);
    sets_layout->addWidget(load);
    sets_layout->addWidget(d->gene_set_label);
    sets_layout->addLayout(set_row);
    layout->addWidget(sets);
    connect(load, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load gene list"), QString(),
                                                          tr("Gene lists (*.txt *.csv *.tsv *.gz);;All files (*)"));
        if (!path.isEmpty()) loadGeneSet(path);
    });
    connect(d->gene_set_color, &QPushButton::clicked, this,
            [this] { colorByGeneSet(d->gene_set_kind->currentIndex() == 1); });
}

// ---- state ----------------------------------------------------------------------------

FilterState FilterPanel::state() const { return d->state; }

void FilterPanel::setState(const FilterState& state) {
    d->state = state;
    apply();
}

void FilterPanel::setValueLayer(ValueLayer layer) {
    if (d->state.layer == layer) return;
    d->state.layer = layer;
    apply();
}

void FilterPanel::commit(const FilterState& after) {
    if (after == d->state) return;
    const FilterState before = d->state;
    d->state = after;
    emit filterChanged(before, after);
    apply();
}

bool FilterPanel::setExpressionText(const QString& text) {
    std::string typed = text.trimmed().toStdString();
    // Genes are matched as the search popup matches them (ignoring case): a gene typed in
    // another case is written as the dataset spells it.
    if (const FilterRulesParse unchecked = parse_filter_rules(typed); unchecked.ok && !d->names.empty()) {
        std::vector<std::pair<std::string, std::string>> respelled;
        for (const std::string& gene : unchecked.genes)
            if (std::string spelled = spell_gene(gene, d->names, d->ids); spelled != gene) respelled.emplace_back(gene, spelled);
        if (!respelled.empty() && unchecked.representable) {
            std::vector<FilterRule> rules = unchecked.rules;
            for (FilterRule& rule : rules)
                for (const auto& [from, to] : respelled)
                    if (rule.gene == from) rule.gene = to;
            typed = filter_rules_text(rules);
        } else if (!respelled.empty()) {
            QString respelled_text = QString::fromStdString(typed);
            for (const auto& [from, to] : respelled) {
                // The gene as a whole word (a bare word, or inside quotes).
                const QRegularExpression word(QStringLiteral("(?<![A-Za-z0-9_.\\-])%1(?![A-Za-z0-9_.\\-])")
                                                  .arg(QRegularExpression::escape(QString::fromStdString(from))));
                respelled_text.replace(word, QString::fromStdString(to));
            }
            typed = respelled_text.toStdString();
        }
    }
    const FilterRulesParse check = parse_filter_rules(typed, d->names, d->ids);
    if (!check.ok) {
        showError(QString::fromStdString(check.message));
        return false;
    }
    FilterState after = d->state;
    // Representable text is stored in the rows' canonical spelling, so rows and text agree.
    after.expression = check.representable ? filter_rules_text(check.rules) : typed;
    showError(QString());
    if (after == d->state) {
        apply();  // the text may differ in spelling only: show the canonical form
        return true;
    }
    commit(after);
    return true;
}

bool FilterPanel::addRule(const QString& gene) {
    const std::string name = spell_gene(gene.trimmed().toStdString(), d->names, d->ids);
    if (name.empty()) return false;
    if (const QString problem = d->gene_problem(name); !problem.isEmpty()) {
        showError(problem);
        return false;
    }
    if (!d->parsed.representable) {
        showError(tr("the filter is not a list of rules: add '%1' in the text form").arg(gene.trimmed()));
        return false;
    }
    std::vector<FilterRule> rules = d->parsed.rules;
    FilterRule rule;
    rule.gene = name;
    for (const FilterRule& existing : rules)
        if (existing.gene == rule.gene && existing.op == rule.op && existing.value == rule.value &&
            existing.negated == rule.negated) {
            showError(tr("'%1 > 0' is already a rule").arg(gene.trimmed()));
            return false;
        }
    rules.push_back(rule);
    FilterState after = d->state;
    after.expression = filter_rules_text(rules);
    showError(QString());
    commit(after);
    return true;
}

std::vector<FilterRule> FilterPanel::rules() const { return d->parsed.rules; }
bool FilterPanel::rulesRepresentable() const { return d->parsed.representable; }
QString FilterPanel::expressionText() const { return d->text->text(); }
QString FilterPanel::errorText() const { return d->error->isHidden() ? QString() : d->error->text(); }
std::int64_t FilterPanel::matchingCells() const { return d->matching; }
std::shared_ptr<const std::vector<std::uint8_t>> FilterPanel::mask() const { return d->mask; }
const std::vector<std::pair<std::string, std::int64_t>>& FilterPanel::breakdown() const { return d->breakdown; }
const std::vector<std::int64_t>& FilterPanel::breakdownTotals() const { return d->totals; }
QString FilterPanel::groupBy() const { return d->group_by; }
bool FilterPanel::busy() const { return d->watcher->activeCount() > 0; }
GeneSearchModel* FilterPanel::geneSearch() const { return d->search_model; }

FilterHistogram* FilterPanel::histogram(int row) const {
    if (row < 0 || static_cast<std::size_t>(row) >= d->rows.size()) return nullptr;
    return d->rows[static_cast<std::size_t>(row)].histogram;
}

void FilterPanel::showError(const QString& message) {
    d->error->setText(message);
    d->error->setVisible(!message.isEmpty());
}

// ---- snapshot -------------------------------------------------------------------------

void FilterPanel::setSnapshot(std::shared_ptr<const AnalysisSnapshot> snapshot) {
    d->snapshot = snapshot ? std::move(snapshot) : std::make_shared<AnalysisSnapshot>();
    ++d->generation;
    d->values.clear();
    d->fetching.clear();
    d->watcher->cancelAll();
    d->names = d->snapshot->var ? d->snapshot->var->index() : std::vector<std::string>{};
    if (d->snapshot->var) {
        const auto ids = gene_ids(*d->snapshot->var);
        d->ids.assign(ids.begin(), ids.end());
    } else {
        d->ids.clear();
    }
    d->search_model->setGenes(d->names, d->ids);
    for (auto& row : d->rows) row.histogram->setValues(nullptr);
    apply();
}

void FilterPanel::setColorKey(const QString& key) {
    d->color_key = key;
    // A new grouping only changes the breakdown: re-evaluate (from cached columns).
    if (!d->state.expression.empty() && key != d->group_by) evaluate();
}

// ---- applying ---------------------------------------------------------------------------

void FilterPanel::apply() {
    d->parsed = parse_filter_rules(d->state.expression);
    d->updating = true;
    const QString text = QString::fromStdString(d->state.expression);
    if (d->text->text() != text) d->text->setText(text);
    d->layer_note->setText(tr("on %1").arg(QString::fromUtf8(value_layer_label(d->state.layer))));
    d->style->setCurrentIndex(std::max(0, d->style->findData(static_cast<int>(d->state.style))));
    d->updating = false;
    showError(d->parsed.ok ? QString() : QString::fromStdString(d->parsed.message));
    syncRows();
    d->plot->setMaskStyle(d->state.style);
    evaluate();
    fetchValues();
}

void FilterPanel::evaluate() {
    d->watcher->cancel(QStringLiteral("filter"));  // the latest request wins
    const std::uint64_t request = ++d->filter_request;
    const std::int64_t total = d->snapshot->obs ? d->snapshot->obs->num_rows() : d->plot->numPoints();
    if (d->state.expression.empty() || !d->parsed.ok) {
        d->matching = -1;
        d->mask.reset();
        d->breakdown.clear();
        d->totals.clear();
        d->group_by.clear();
        d->plot->setCellMask({});
        d->count->setText(d->state.expression.empty() ? tr("no filter: all %1 cells").arg(number_text(total))
                                                      : tr("the filter does not parse"));
        updateBreakdown();
        updateRowHistograms();
        if (d->state.expression.empty()) emit filterApplied(total, total);
        return;
    }
    Engine* engine = d->current_engine();
    if (!engine || !d->snapshot->dataset) {
        d->count->setText(tr("open a dataset to apply the filter"));
        return;
    }
    // Group by the plot's categorical colouring when there is one (else the engine uses leiden).
    std::string group_by;
    if (const Column* column = d->snapshot->obs ? d->snapshot->obs->find(d->color_key.toStdString()) : nullptr)
        if (std::holds_alternative<CategoricalColumn>(column->data) || std::holds_alternative<BoolColumn>(column->data))
            group_by = column->name;
    const Pending<CellMask> pending = engine->evaluate_filter(d->state.expression, d->state.layer, group_by);
    d->count->setText(tr("evaluating..."));
    d->watcher->watch(pending.handle(), QStringLiteral("filter"), [this, pending, request](const JobStatus& status) {
        if (request != d->filter_request) return;  // superseded
        const auto result = pending.value();
        if (status.state != JobState::Succeeded || !result) {
            if (status.state == JobState::Cancelled) return;
            const QString message = QString::fromStdString(status.message);
            showError(message);
            d->count->setText(tr("the filter failed"));
            emit filterFailed(message);
            return;
        }
        d->mask = std::shared_ptr<const std::vector<std::uint8_t>>(result, &result->mask);
        d->matching = result->num_matching;
        d->breakdown = result->by_cluster;
        d->group_by = QString::fromStdString(result->group_by);
        if (static_cast<std::int64_t>(result->mask.size()) == d->plot->numPoints()) d->plot->setCellMask(result->mask);
        const auto total_cells = static_cast<std::int64_t>(result->mask.size());
        d->count->setText(tr("%1 of %2 cells match (%3%)")
                              .arg(number_text(d->matching), number_text(total_cells))
                              .arg(total_cells > 0 ? 100.0 * static_cast<double>(d->matching) / static_cast<double>(total_cells) : 0.0,
                                   0, 'f', 1));
        updateBreakdown();
        updateRowHistograms();
        emit filterApplied(d->matching, total_cells);
    });
}

void FilterPanel::fetchValues() {
    Engine* engine = d->current_engine();
    if (!engine || !d->snapshot->dataset || !d->parsed.ok) return;
    const int layer = static_cast<int>(d->state.layer);
    for (const std::string& gene : d->parsed.genes) {
        const auto key = std::make_pair(gene, layer);
        if (d->values.count(key) || d->fetching.count(key)) continue;
        d->fetching.insert(key);
        const Pending<GeneValues> pending = engine->gene_values(gene, d->state.layer);
        const std::uint64_t generation = d->generation;
        d->watcher->watch(pending.handle(), QStringLiteral("values"), [this, pending, key, generation](const JobStatus& status) {
            if (generation != d->generation) return;
            d->fetching.erase(key);
            const auto values = pending.value();
            if (status.state != JobState::Succeeded || !values) return;  // the filter job reports the error
            d->values[key] = std::shared_ptr<const std::vector<float>>(values, &values->values);
            updateRowHistograms();
        });
    }
}

// ---- rule rows ----------------------------------------------------------------------------

void FilterPanel::syncRows() {
    const bool show_rows = d->parsed.ok && d->parsed.representable;
    d->rows_box->setVisible(show_rows);
    d->rows_note->setVisible(d->parsed.ok && !d->parsed.representable);
    const std::vector<FilterRule>& rules = d->parsed.rules;
    if (d->rows.size() != rules.size()) {
        rebuildRows();
    } else {
        d->updating = true;
        for (std::size_t index = 0; index < rules.size(); ++index) {
            const FilterRule& rule = rules[index];
            Private::Row& row = d->rows[index];
            row.join->setCurrentIndex(rule.join == RuleJoin::Or ? 1 : 0);
            row.negated->setChecked(rule.negated);
            const QString gene = QString::fromStdString(rule.gene);
            if (row.gene->text() != gene) row.gene->setText(gene);
            row.op->setCurrentIndex(static_cast<int>(std::find(std::begin(k_ops), std::end(k_ops), rule.op) - std::begin(k_ops)));
            row.value->setValue(rule.value);
            row.upper->setValue(rule.upper);
            row.upper->setVisible(rule.op == RuleOp::Between);
        }
        d->updating = false;
    }
    updateRowHistograms();
}

void FilterPanel::rebuildRows() {
    // The old rows may be the sender of the signal being handled (a remove button):
    // silence them and delete them once control is back in the event loop.
    for (Private::Row& row : d->rows) {
        for (QObject* child : row.widget->findChildren<QObject*>()) child->blockSignals(true);
        row.widget->hide();
        d->rows_layout->removeWidget(row.widget);
        row.widget->deleteLater();
    }
    d->rows.clear();
    const std::vector<FilterRule>& rules = d->parsed.rules;
    d->updating = true;
    for (std::size_t index = 0; index < rules.size(); ++index) {
        const FilterRule& rule = rules[index];
        const int row_index = static_cast<int>(index);
        Private::Row row;
        row.widget = new QWidget(d->rows_box);
        auto* outer = new QVBoxLayout(row.widget);
        outer->setContentsMargins(0, 2, 0, 2);
        outer->setSpacing(1);
        auto* line = new QHBoxLayout;
        row.join = new QComboBox(row.widget);
        row.join->addItems({tr("and"), tr("or")});
        row.join->setCurrentIndex(rule.join == RuleJoin::Or ? 1 : 0);
        row.join->setVisible(index > 0);
        row.negated = new QCheckBox(tr("not"), row.widget);
        row.negated->setChecked(rule.negated);
        row.gene = new QLineEdit(QString::fromStdString(rule.gene), row.widget);
        row.gene->setMinimumWidth(60);
        row.op = new QComboBox(row.widget);
        for (const RuleOp op : k_ops) row.op->addItem(QString::fromUtf8(rule_op_text(op)));
        row.op->setCurrentIndex(static_cast<int>(std::find(std::begin(k_ops), std::end(k_ops), rule.op) - std::begin(k_ops)));
        const auto make_spin = [&](float value) {
            auto* spin = new QDoubleSpinBox(row.widget);
            spin->setRange(-1e9, 1e9);
            spin->setDecimals(4);
            spin->setSingleStep(0.1);
            spin->setKeyboardTracking(false);  // valueChanged on Enter / focus out / steps only
            spin->setMaximumWidth(84);
            spin->setValue(value);
            return spin;
        };
        row.value = make_spin(rule.value);
        row.upper = make_spin(rule.upper);
        row.upper->setVisible(rule.op == RuleOp::Between);
        auto* remove = new QToolButton(row.widget);
        remove->setText(QStringLiteral("\u00d7"));
        remove->setToolTip(tr("Remove this rule"));
        // Two lines, so that the dock stays narrow: [and|or] [not] gene [x] / op value [upper].
        line->addWidget(row.join);
        line->addWidget(row.negated);
        line->addWidget(row.gene, 1);
        line->addWidget(remove);
        outer->addLayout(line);
        auto* comparison = new QHBoxLayout;
        comparison->addWidget(row.op);
        comparison->addWidget(row.value);
        comparison->addWidget(row.upper);
        comparison->addStretch(1);
        outer->addLayout(comparison);
        row.histogram = new FilterHistogram(row.widget);
        outer->addWidget(row.histogram);
        d->rows_layout->addWidget(row.widget);

        connect(row.join, &QComboBox::currentIndexChanged, this, [this, row_index](int choice) {
            editRule(row_index, [choice](FilterRule& edited) { edited.join = choice == 1 ? RuleJoin::Or : RuleJoin::And; });
        });
        connect(row.negated, &QCheckBox::toggled, this, [this, row_index](bool checked) {
            editRule(row_index, [checked](FilterRule& edited) { edited.negated = checked; });
        });
        QLineEdit* gene_edit = row.gene;
        connect(row.gene, &QLineEdit::editingFinished, this, [this, row_index, gene_edit] {
            if (d->updating) return;
            const std::string gene = spell_gene(gene_edit->text().trimmed().toStdString(), d->names, d->ids);
            const auto& current = d->parsed.rules;
            if (static_cast<std::size_t>(row_index) >= current.size() || gene == current[static_cast<std::size_t>(row_index)].gene)
                return;
            const QString problem = gene.empty() ? tr("the gene name is empty") : d->gene_problem(gene);
            if (!problem.isEmpty()) {
                showError(problem);
                gene_edit->setText(QString::fromStdString(current[static_cast<std::size_t>(row_index)].gene));
                return;
            }
            showError(QString());
            editRule(row_index, [gene](FilterRule& edited) { edited.gene = gene; });
        });
        FilterHistogram* histogram = row.histogram;
        connect(row.op, &QComboBox::currentIndexChanged, this, [this, row_index, histogram](int choice) {
            if (choice < 0) return;
            editRule(row_index, [choice, histogram](FilterRule& edited) {
                edited.op = k_ops[choice];
                if (edited.op == RuleOp::Between && edited.upper < edited.value)
                    edited.upper = histogram->hasValues() ? std::max(edited.value, histogram->axisRange().second)
                                                          : edited.value + 1.0f;
            });
        });
        connect(row.value, &QDoubleSpinBox::valueChanged, this, [this, row_index](double value) {
            editRule(row_index, [value](FilterRule& edited) { edited.value = static_cast<float>(value); });
        });
        connect(row.upper, &QDoubleSpinBox::valueChanged, this, [this, row_index](double value) {
            editRule(row_index, [value](FilterRule& edited) { edited.upper = static_cast<float>(value); });
        });
        connect(remove, &QToolButton::clicked, this, [this, row_index] { removeRule(row_index); });
        connect(row.histogram, &FilterHistogram::rangeSelected, this, [this, row_index](float low, float high) {
            editRule(row_index, [low, high](FilterRule& edited) {
                edited.op = RuleOp::Between;
                edited.value = brush_round(low);
                edited.upper = std::max(edited.value, brush_round(high));
            });
        });
        d->rows.push_back(row);
    }
    d->updating = false;
}

void FilterPanel::editRule(int row, const std::function<void(FilterRule&)>& change) {
    if (d->updating || !d->parsed.representable || row < 0 || static_cast<std::size_t>(row) >= d->parsed.rules.size())
        return;
    std::vector<FilterRule> rules = d->parsed.rules;
    change(rules[static_cast<std::size_t>(row)]);
    FilterState after = d->state;
    after.expression = filter_rules_text(rules);
    commit(after);
}

void FilterPanel::removeRule(int row) {
    if (!d->parsed.representable || row < 0 || static_cast<std::size_t>(row) >= d->parsed.rules.size()) return;
    std::vector<FilterRule> rules = d->parsed.rules;
    rules.erase(rules.begin() + row);
    if (!rules.empty()) rules.front().join = RuleJoin::And;
    FilterState after = d->state;
    after.expression = filter_rules_text(rules);
    commit(after);
}

void FilterPanel::updateRowHistograms() {
    const int layer = static_cast<int>(d->state.layer);
    for (std::size_t index = 0; index < d->rows.size() && index < d->parsed.rules.size(); ++index) {
        const FilterRule& rule = d->parsed.rules[index];
        FilterHistogram* histogram = d->rows[index].histogram;
        const auto found = d->values.find({rule.gene, layer});
        const auto values = found == d->values.end() ? nullptr : found->second;
        histogram->setValues(values);
        histogram->setMask(values && d->mask && d->mask->size() == values->size() ? d->mask : nullptr);
        const auto [low, high] = histogram->axisRange();
        float accepted_low = 1.0f, accepted_high = 0.0f;  // none (negated rules: not shaded)
        if (!rule.negated) {
            switch (rule.op) {
                case RuleOp::Greater:
                case RuleOp::GreaterEqual: accepted_low = rule.value; accepted_high = std::max(high, rule.value); break;
                case RuleOp::Less:
                case RuleOp::LessEqual: accepted_low = std::min(low, rule.value); accepted_high = rule.value; break;
                case RuleOp::Equal: accepted_low = accepted_high = rule.value; break;
                case RuleOp::Between: accepted_low = rule.value; accepted_high = rule.upper; break;
            }
        }
        histogram->setAcceptedRange(accepted_low, accepted_high);
    }
}

void FilterPanel::updateBreakdown() {
    d->totals.assign(d->breakdown.size(), 0);
    std::vector<std::int32_t> codes;
    std::vector<std::string> categories;
    if (const Column* column = d->snapshot->obs && !d->group_by.isEmpty() ? d->snapshot->obs->find(d->group_by.toStdString())
                                                                          : nullptr;
        column && obs_column_categories(*column, codes, categories)) {
        for (const std::int32_t code : codes)
            if (code >= 0 && static_cast<std::size_t>(code) < d->totals.size()) ++d->totals[static_cast<std::size_t>(code)];
    }
    d->table->setRowCount(static_cast<int>(d->breakdown.size()));
    d->table->horizontalHeaderItem(0)->setText(d->group_by.isEmpty() ? tr("group") : d->group_by);
    for (std::size_t index = 0; index < d->breakdown.size(); ++index) {
        const auto& [name, matching] = d->breakdown[index];
        const std::int64_t total = d->totals[index];
        const int row = static_cast<int>(index);
        const auto put = [&](int column, const QString& text, bool number) {
            auto* item = new QTableWidgetItem(text);
            if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            d->table->setItem(row, column, item);
        };
        put(0, QString::fromStdString(name), false);
        put(1, number_text(matching), true);
        put(2, number_text(total), true);
        put(3, total > 0 ? QString::number(100.0 * static_cast<double>(matching) / static_cast<double>(total), 'f', 1)
                         : QStringLiteral("-"),
            true);
    }
}

// ---- gene sets ------------------------------------------------------------------------------

bool FilterPanel::loadGeneSet(const QString& path) {
    std::vector<std::string> genes;
    try {
        genes = read_gene_list_file(path.toStdString());
    } catch (const std::exception& failure) {
        d->gene_set_status = QString::fromUtf8(failure.what());
        d->gene_set_label->setText(d->gene_set_status);
        emit geneSetFailed(d->gene_set_status);
        return false;
    }
    d->gene_set.clear();
    int missing = 0, ambiguous = 0;
    for (const std::string& gene : genes) {
        d->gene_set << QString::fromStdString(gene);
        if (d->names.empty()) continue;
        const GeneResolution resolution = d->resolve(gene);
        if (resolution.ambiguous()) ++ambiguous;
        else if (!resolution.found()) ++missing;
    }
    d->gene_set_status = tr("%1 genes from %2").arg(genes.size()).arg(QFileInfo(path).fileName());
    if (missing > 0) d->gene_set_status += tr(" (%1 not in this dataset)").arg(missing);
    if (ambiguous > 0) d->gene_set_status += tr(" (%1 ambiguous: name them by gene id)").arg(ambiguous);
    d->gene_set_label->setText(d->gene_set_status);
    d->gene_set_color->setEnabled(true);
    return true;
}

QStringList FilterPanel::geneSet() const { return d->gene_set; }
QString FilterPanel::geneSetStatus() const { return d->gene_set_status; }

bool FilterPanel::colorByGeneSet(bool score) {
    Engine* engine = d->current_engine();
    if (!engine || !d->snapshot->dataset || d->gene_set.isEmpty()) {
        emit geneSetFailed(tr("load a gene list and open a dataset first"));
        return false;
    }
    std::vector<std::string> genes;
    for (const QString& gene : d->gene_set) genes.push_back(gene.toStdString());
    d->watcher->cancel(QStringLiteral("gene set"));
    const std::uint64_t request = ++d->set_request;
    const Pending<GeneValues> pending = engine->gene_set_score(std::move(genes), score, d->plot->model()->valueLayer());
    d->watcher->watch(pending.handle(), QStringLiteral("gene set"), [this, pending, request, score](const JobStatus& status) {
        if (request != d->set_request) return;
        const auto values = pending.value();
        if (status.state != JobState::Succeeded || !values) {
            if (status.state == JobState::Cancelled) return;
            const QString message = QString::fromStdString(status.message);
            d->gene_set_label->setText(message);
            emit geneSetFailed(message);
            return;
        }
        if (static_cast<std::int64_t>(values->values.size()) != d->plot->numPoints()) {
            const QString message = tr("the gene set has %1 values for %2 cells in the plot")
                                        .arg(values->values.size())
                                        .arg(d->plot->numPoints());
            emit geneSetFailed(message);
            return;
        }
        const QString label = QStringLiteral("%1 (%2)").arg(QString::fromStdString(values->gene),
                                                            QString::fromUtf8(value_layer_label(values->layer)));
        d->plot->setContinuous(label, values->values);
        d->set_colored_label = label;
        d->set_scored = score;
        emit geneSetColored(label);
    });
    return true;
}

}  // namespace fathom::ui
