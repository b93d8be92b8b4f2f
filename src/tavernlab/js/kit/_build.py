"""Turn a verified package's files into its one kit ES module (recipes in :mod:`.pins`).

* :class:`~tavernlab.js.kit._pins.EsmBuild`: :func:`~tavernlab.js.kit._bundle.bundle_esm` (a
  single file without imports comes back unchanged, after a one-line-comment header).
* :class:`~tavernlab.js.kit._pins.CommonJsBuild`: the file runs inside
  ``(function (module, exports) { ... }).call(exports, module, exports)``, then
  ``module.exports`` becomes the default export and the pinned names become named exports,
  read once when the module is evaluated. The wrapper opens on the file's first line, so line
  numbers in stack traces are the file's own. Like every ES module the code runs in strict
  mode (tavernlab choice; the six pinned libraries were checked to work so).

The result is plain text; nothing here runs JavaScript or touches the disk.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from tavernlab.js._errors import KitBuildFailed
from tavernlab.js.kit._bundle import bundle_esm, export_name
from tavernlab.js.kit._esm_graph import module_export_names
from tavernlab.js.kit._pins import CommonJsBuild, EsmBuild, KitPin


@dataclass(frozen=True, slots=True)
class BuiltModule:
    """A kit module's source, its export names (``default`` included when present) and the
    package file it was built from (``files`` package files went into it)."""

    source: str
    names: tuple[str, ...]
    entry: str
    files: int


def build_module(pin: KitPin, files: Mapping[str, bytes]) -> BuiltModule:
    """Build ``pin``'s module from its package ``files``; raises :class:`KitBuildFailed`."""
    recipe = pin.build
    if isinstance(recipe, EsmBuild):
        bundle = bundle_esm(files, recipe.entry, pin.package)
        return BuiltModule(_header(pin, recipe.entry) + " " + bundle.source, bundle.names,
                           recipe.entry, bundle.files)
    return _commonjs(pin, recipe, files)


def _commonjs(pin: KitPin, recipe: CommonJsBuild, files: Mapping[str, bytes]) -> BuiltModule:
    if recipe.esm_entry is not None:
        declared = module_export_names(_file(pin, files, recipe.esm_entry), recipe.esm_entry,
                                       pin.package)
        expected = tuple(sorted({*recipe.names, *(("default",) if recipe.default else ())}))
        if declared != expected:
            raise KitBuildFailed(
                f"The {pin.package} {pin.version} ESM entry `{recipe.esm_entry}` exports "
                f"{', '.join(declared)}, not the pinned {', '.join(expected)}.",
                package=pin.package)
    try:
        code = _file(pin, files, recipe.file).decode("utf-8")
    except UnicodeDecodeError:
        raise KitBuildFailed(f"The {pin.package} file `{recipe.file}` is not UTF-8.",
                             package=pin.package) from None
    reads = ",\n  ".join(f"__kit_n{index} = __kit_module.exports[{json.dumps(name)}]"
                         for index, name in enumerate(recipe.names))
    exported = [f"__kit_n{index} as {export_name(name)}" for index, name in
                enumerate(recipe.names)]
    if recipe.default:
        exported.append("__kit_module_exports as default")
    source = (
        _header(pin, recipe.file) + " "
        "const __kit_module = { exports: {} }; (function (module, exports) {" + code
        + "\n}).call(__kit_module.exports, __kit_module, __kit_module.exports);\n"
        + "const __kit_module_exports = __kit_module.exports"
        + (f",\n  {reads}" if reads else "") + ";\n"
        + "export {\n  " + ",\n  ".join(exported) + ",\n};\n")
    names = tuple(sorted({*recipe.names, *(("default",) if recipe.default else ())}))
    return BuiltModule(source, names, recipe.file, 1)


def _file(pin: KitPin, files: Mapping[str, bytes], path: str) -> bytes:
    data = files.get(path)
    if data is None:
        raise KitBuildFailed(f"The {pin.package} {pin.version} tarball has no `{path}`.",
                             package=pin.package)
    return data


def _header(pin: KitPin, entry: str) -> str:
    """A comment that opens every kit module's first line (so the package's own line numbers
    stay right): what it is and where it came from."""
    return (f"/* {pin.module}: {pin.package} {pin.version} ({entry}), {pin.integrity}; built "
            "by tavernlab */")
