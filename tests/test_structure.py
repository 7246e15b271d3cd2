"""The package's layout: imports run down the layers and never in a circle.

Layers, bottom to top: `vitheory/core/` (names no package of the science), `vitheory/images/` (the
real images and their models, shared), the papers (`li23`, `jsl22`, `pk22`: none imports another),
the top-level modules (the paper table, params, report, verify, ...), and the stage scripts. A module
imports from its own layer or the ones below; within a layer, only from its own package, except at
the top level."""

from pathlib import Path

from conftest import ROOT

from vitheory.pipeline import direct_imports

PAPERS = ("li23", "jsl22", "pk22")


def _layer(module: str) -> tuple[int, str]:
    """(layer, package) of a dotted module name under vitheory or stages."""
    parts = module.split(".")
    if parts[0] == "stages":
        return 4, "stages"
    if len(parts) == 1:  # vitheory/__init__.py: the pinned CPU numerics, below everything
        return 0, "vitheory"
    if len(parts) == 2 and (ROOT / "vitheory" / f"{parts[1]}.py").is_file():  # vitheory.report, vitheory.papers
        return 3, "top"
    return {"core": 0, "images": 1}.get(parts[1], 2), parts[1]


def _imports() -> dict[str, set[str]]:
    """Every module of vitheory/ and stages/ to the vitheory modules it imports (by dotted name)."""
    def dotted(relative: Path) -> str:
        return ".".join(relative.with_suffix("").parts).removesuffix(".__init__")

    return {dotted(path.relative_to(ROOT)): {dotted(Path(file)) for file in direct_imports(path)}
            for path in [*(ROOT / "vitheory").rglob("*.py"), *(ROOT / "stages").glob("*.py")]}


def test_imports_run_down_the_layers():
    wrong = []
    for module, imported in _imports().items():
        layer, package = _layer(module)
        for target in imported:
            target_layer, target_package = _layer(target)
            if target_layer > layer or (target_layer == layer and layer in (1, 2) and target_package != package):
                wrong.append(f"{module} -> {target}")
    assert not wrong, f"imports that run back up or across papers: {sorted(wrong)}"


def test_no_import_circle():
    graph = _imports()
    state: dict[str, str] = {}
    circles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                circles.append(path[path.index(target):] + [target] if target in path else [module, target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, f"import circles: {circles}"


def test_core_names_no_package_of_the_science():
    named = [f"{path.name}: {word}" for path in (ROOT / "vitheory/core").glob("*.py")
             for word in ("li23", "jsl22", "pk22", "vitheory.images") if word in path.read_text()]
    assert not named, f"vitheory/core names a package of the science: {named}"


def test_the_checks_can_fail():
    """The layer rule flags a paper importing another paper, and core importing a paper."""
    assert _layer("vitheory.li23.claims") == (2, "li23") and _layer("vitheory.jsl22.data") == (2, "jsl22")
    assert _layer("vitheory.core.cli")[0] < _layer("vitheory.images.models")[0] < _layer("vitheory.pk22.tables")[0]
    assert _layer("vitheory.pk22.tables")[0] < _layer("vitheory.papers")[0] < _layer("stages.report")[0]
    assert Path(ROOT / "vitheory/core").is_dir()
