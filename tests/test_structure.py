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


def _layer(module: str, root: Path = ROOT) -> tuple[int, str]:
    """(layer, package) of a dotted module name under vitheory or stages."""
    parts = module.split(".")
    if parts[0] == "stages":
        return 4, "stages"
    if len(parts) == 1:  # vitheory/__init__.py: the pinned CPU numerics, below everything
        return 0, "vitheory"
    if len(parts) == 2 and (root / "vitheory" / f"{parts[1]}.py").is_file():  # vitheory.report, vitheory.papers
        return 3, "top"
    return {"core": 0, "images": 1}.get(parts[1], 2), parts[1]


def _imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Every module of vitheory/ and stages/ to the vitheory modules it imports (by dotted name)."""
    def dotted(relative: Path) -> str:
        return ".".join(relative.with_suffix("").parts).removesuffix(".__init__")

    return {dotted(path.relative_to(root)): {dotted(Path(file)) for file in direct_imports(path, root)}
            for path in [*(root / "vitheory").rglob("*.py"), *(root / "stages").glob("*.py")]}


def wrong_imports(graph: dict[str, set[str]], root: Path = ROOT) -> list[str]:
    """The imports that run up the layers, or across packages of the same layer (papers, images)."""
    wrong = []
    for module, imported in graph.items():
        layer, package = _layer(module, root)
        for target in imported:
            target_layer, target_package = _layer(target, root)
            if target_layer > layer or (target_layer == layer and layer in (1, 2) and target_package != package):
                wrong.append(f"{module} -> {target}")
    return sorted(wrong)


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each circle a depth-first walk meets, as the modules around it, the first repeated at the end."""
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
    return circles


def test_imports_run_down_the_layers():
    wrong = wrong_imports(_imports())
    assert not wrong, f"imports that run back up or across papers: {wrong}"


def test_no_import_circle():
    circles = import_circles(_imports())
    assert not circles, f"import circles: {circles}"


def test_core_names_no_package_of_the_science():
    named = [f"{path.name}: {word}" for path in (ROOT / "vitheory/core").glob("*.py")
             for word in ("li23", "jsl22", "pk22", "vitheory.images") if word in path.read_text()]
    assert not named, f"vitheory/core names a package of the science: {named}"


def test_the_checks_can_fail(tmp_path):
    """A small package with every kind of bad import the rules forbid, and a circle, read from its files
    as the real package is: each is flagged, and the allowed ones are not."""
    files = {
        "vitheory/core/numbers.py": "from vitheory.li23 import claims\n",  # core importing a paper
        "vitheory/core/base.py": "",
        "vitheory/images/models.py": "import vitheory.core.base\n",  # down: allowed
        "vitheory/li23/claims.py": "from vitheory.jsl22.data import table\nfrom vitheory.images import models\n",
        "vitheory/jsl22/data.py": "from vitheory.papers import PAPERS\n",  # a paper importing the top level
        "vitheory/papers.py": "from vitheory.pk22 import a\n",  # top level importing a paper: allowed
        "vitheory/pk22/a.py": "from vitheory.pk22.b import f\n",
        "vitheory/pk22/b.py": "import vitheory.pk22.c\n",
        "vitheory/pk22/c.py": "from vitheory.pk22 import a\n",  # a -> b -> c -> a
        "stages/report.py": "from vitheory.papers import PAPERS\nimport os\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = _imports(tmp_path)
    assert wrong_imports(graph, tmp_path) == ["vitheory.core.numbers -> vitheory.li23.claims",
                                              "vitheory.jsl22.data -> vitheory.papers",
                                              "vitheory.li23.claims -> vitheory.jsl22.data"]
    assert import_circles(graph) == [["vitheory.pk22.a", "vitheory.pk22.b", "vitheory.pk22.c", "vitheory.pk22.a"]]
    assert import_circles({"x": {"y"}, "y": set()}) == []


def unlisted_modules(tree: str, root: Path = ROOT) -> list[str]:
    """The modules of vitheory/ that docs/LAYOUT.md's tree `tree` does not name in their package's entry (a
    top-level module: in an entry of its own)."""
    entries: dict[str, str] = {}
    package = ""
    for line in tree.splitlines():
        indent = len(line) - len(line.lstrip())
        if indent == 2:  # a package (`core/`) or a top-level module (`params.py`)
            package = line.split()[0]
        if indent >= 2:
            entries[package] = entries.get(package, "") + " " + line
    missing = []
    for path in sorted((root / "vitheory").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        relative = path.relative_to(root / "vitheory")
        entry = entries.get(f"{relative.parts[0]}/" if len(relative.parts) > 1 else relative.name, "")
        if path.name not in entry.replace(",", " ").split():
            missing.append(relative.as_posix())
    return missing


def _layout_tree() -> str:
    text = (ROOT / "docs/LAYOUT.md").read_text()
    return text.split("```\n", 2)[1]


def test_layouts_tree_names_every_module():
    missing = unlisted_modules(_layout_tree())
    assert not missing, f"docs/LAYOUT.md's tree does not name: {missing}; add a line for each"


def test_a_module_missing_from_the_tree_is_named(tmp_path):
    for name in ("vitheory/core/config.py", "vitheory/core/spare.py", "vitheory/li23/phase.py", "vitheory/report.py",
                 "vitheory/extra.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    tree = ("vitheory/\n  core/   the bottom\n    config.py   the loader; not spare.py's\n"
            "  li23/   [LI23]: phase.py (LI-1),\n          report.py\n  report.py  claims.json\n")
    assert unlisted_modules(tree, tmp_path) == ["core/spare.py", "extra.py"]
