#!/usr/bin/env python3
"""The layer rule of DESIGN.md, checked on every project include of core/, gpu/, ui/ and app/.

    include_rule.py [ROOT]          check the tree at ROOT (default: the repository)
    include_rule.py --print-table   print what each layer may include, and exit

Reports each violation as `file:line: includes X (why)` and exits 1 if there is any,
else prints one summary line and exits 0. An include is a project include when it is
spelled from the repository root ("core/algo/pca.hpp", or <core/...> in angle brackets).

The rule is the table LAYERS below (one place; docs/DESIGN.md shows it and
cmake/FathomIncludeRoots.cmake gives the compiler the same picture):
  - a file may include its own layer and the layers it depends on, plus what those pass
    on (dependencies marked "+": the layer's public headers may show them to whoever
    includes them, as a PUBLIC link in CMake does);
  - a library's public header (a header directly in one of its folders) may include
    only what the library passes on: its own layer and its "+" dependencies, no detail/;
  - <layer folder>/detail/ is private to its layer;
  - an include of a file next to the includer is spelled from the repository root too.
"""
import os
import re
import sys

# Layer -> the folders it owns (the first is where its detail/ folder would be).
FOLDERS = {
    "types": ["core/types"],
    "memory": ["core/memory"],
    "data": ["core/data"],
    "io": ["core/io"],
    "backend": ["core/backend"],
    "algo": ["core/algo"],
    "engine": ["core/engine"],
    "gpu": ["gpu"],
    "ui": ["ui", "ui/vtk"],
    "app/cli": ["app/cli"],
    "app/gui": ["app/gui"],
}

# DESIGN's arrows: app -> ui -> engine -> {algo, io, backend} -> data -> types; gpu -> backend.
# "+" = passed on (a PUBLIC link: the layer's public headers use it); no "+" = private to
# the layer (the engine links algo and io PRIVATE, so ui and app never see them).
LAYERS = {
    "types": [],
    "memory": [],  # allocation helpers (uninitialized.hpp, first_touch.hpp), below every layer that uses them
    "data": ["types+"],
    "io": ["data+", "memory"],
    "backend": ["data+"],
    "algo": ["backend+", "data+", "memory"],
    "engine": ["algo", "io", "backend+", "data+", "memory"],
    "gpu": ["backend+"],
    "ui": ["engine+"],
    # Executables: no public headers. The CLI's file tools (info, convert, synth) read and
    # write files through io; both entry points build the backends (gpu) for the engine.
    "app/cli": ["engine", "io", "gpu"],
    "app/gui": ["ui", "engine", "gpu"],
}
LIBRARIES = {"types", "memory", "data", "io", "backend", "algo", "engine", "gpu", "ui"}

# Temporary exceptions: (file, included header) -> why. Each is one file and one header;
# app/CMakeLists.txt gives exactly these files algo's public root. One that is no longer
# used is reported, so that it goes as soon as the include does.
EXCEPTIONS = {}

SCANNED = ["core", "gpu", "ui", "app"]
SOURCE_SUFFIXES = (".hpp", ".h", ".cpp", ".cc", ".cu", ".cuh", ".inl")
HEADER_SUFFIXES = (".hpp", ".h")  # .cuh are nvcc-only: never public
PROJECT_PREFIXES = tuple(folder + "/" for folder in SCANNED)
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')


def dependencies(layer):
    return [name.rstrip("+") for name in LAYERS[layer]]


def passed_on(layer):
    """The layers that including `layer`'s public headers may bring in (itself included)."""
    result = {layer}
    for name in LAYERS[layer]:
        if name.endswith("+"):
            result |= passed_on(name[:-1])
    return result


def allowed(layer):
    """The layers that any file of `layer` may include."""
    result = {layer}
    for name in dependencies(layer):
        result |= passed_on(name)
    return result


def allowed_in_public_header(layer):
    return passed_on(layer)


def layer_of(path):
    """(layer, folder) owning a repository-relative path, or (None, None)."""
    best = (None, None)
    for layer, folders in FOLDERS.items():
        for folder in folders:
            if path.startswith(folder + "/") and (best[1] is None or len(folder) > len(best[1])):
                best = (layer, folder)
    return best


def detail_owner(path):
    """The layer whose detail/ folder holds `path`, or None."""
    for layer, folders in FOLDERS.items():
        for folder in folders:
            if path.startswith(folder + "/detail/"):
                return layer
    return None


def is_public_header(path):
    layer, folder = layer_of(path)
    return (layer in LIBRARIES and path.endswith(HEADER_SUFFIXES)
            and os.path.dirname(path) == folder)


def check_include(path, included):
    """Why `path` may not include the project header `included`, or None."""
    if (path, included) in EXCEPTIONS:
        return None
    layer, _ = layer_of(path)
    target, _ = layer_of(included)
    if target is None:
        return "it is in no layer: a folder missing from the table in tests/layers/include_rule.py"
    owner = detail_owner(included)
    public = is_public_header(path)
    if owner is not None and owner != layer:
        return f"{os.path.dirname(included)} is private to layer {owner}"
    if owner is not None and public:
        return f"a public header of layer {layer} may not include a detail header"
    if target not in allowed(layer):
        return f"layer {layer} may not include layer {target}"
    if public and target not in allowed_in_public_header(layer):
        return (f"a public header of layer {layer} may not include layer {target}: "
                f"{layer} keeps {target} private")
    return None


def scan(root):
    violations = []
    used_exceptions = set()
    files = []
    for top in SCANNED:
        for directory, subdirs, names in os.walk(os.path.join(root, top)):
            subdirs.sort()
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    full = os.path.join(directory, name)
                    files.append(os.path.relpath(full, root).replace(os.sep, "/"))
    includes = 0
    for path in files:
        layer, _ = layer_of(path)
        if layer is None:
            violations.append(f"{path}:1: is in no layer (add its folder to the table in "
                              f"tests/layers/include_rule.py)")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
            for number, line in enumerate(source, start=1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                quoted, angled = match.groups()
                included = quoted or angled
                if not included.startswith(PROJECT_PREFIXES):
                    # A quoted include of a file next to the includer is ours too, and must
                    # be spelled from the root so that the layer rule (and the include roots)
                    # see it; anything else is a system or generated header.
                    sibling = os.path.join(os.path.dirname(path), included)
                    if quoted and os.path.isfile(os.path.join(root, sibling)):
                        violations.append(f"{path}:{number}: includes {included} "
                                          f"(spell it from the repository root: "
                                          f"{os.path.normpath(sibling)})")
                    continue
                includes += 1
                if (path, included) in EXCEPTIONS:
                    used_exceptions.add((path, included))
                why = check_include(path, included)
                if why:
                    violations.append(f"{path}:{number}: includes {included} ({why})")
    for (path, included), reason in sorted(EXCEPTIONS.items()):
        if (path, included) not in used_exceptions and os.path.isfile(os.path.join(root, path)):
            violations.append(f"{path}:1: no longer includes {included}: remove its exception "
                              f"from tests/layers/include_rule.py and app/CMakeLists.txt")
    return files, includes, violations


def print_table():
    width = max(len(layer) for layer in LAYERS)
    for layer in LAYERS:
        others = [name for name in LAYERS if name in allowed(layer) and name != layer]
        line = f"{layer:<{width}}  may include: {', '.join(others) or '-'}"
        if layer in LIBRARIES:
            shown = [name for name in LAYERS if name in passed_on(layer) and name != layer]
            line += f"; its public headers: {', '.join(shown) or '-'}"
        print(line)
    for (path, included), reason in sorted(EXCEPTIONS.items()):
        print(f"exception: {path} may include {included} ({reason})")


def main(argv):
    if argv[1:] == ["--print-table"]:
        print_table()
        return 0
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    files, includes, violations = scan(root)
    for violation in violations:
        print(violation)
    if violations:
        print(f"include rule: {len(violations)} violation(s) in {root}")
        return 1
    if not files:
        print(f"include rule: no sources under {root}")
        return 1
    print(f"include rule: {len(files)} files, {includes} project includes, no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
