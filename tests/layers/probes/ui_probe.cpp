// A ui source, compiled only by the layers_probe_ui_* targets (tests/layers/CMakeLists.txt)
// with exactly fathom_ui's usage requirements (fathom_engine's in a build without the GUI):
// what a file of ui/ sees through the include roots. The targets differ in one
// definition, which adds one include; the control (layers_probe_ui_engine) adds none and
// must compile, so a probe that fails does so because of that include alone.
#include "core/engine/Engine.hpp"
#if defined(FATHOM_PROBE_ALGO)
#include "core/algo/pca.hpp"
#elif defined(FATHOM_PROBE_IO)
#include "core/io/readers.hpp"
#endif

namespace fathom::probe {

/// Uses the engine API as a panel does, so that the control proves the header usable.
bool has_engine(const Engine* engine) { return engine != nullptr; }

}  // namespace fathom::probe
