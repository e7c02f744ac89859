"""The layering of kerasnmt's subpackages, read from the import statements of its files.

`data` (files, vocabularies, `tf.data` pipelines) depends on nothing else of kerasnmt;
`layers` builds on `data`; `decoding` (the samplers and the translation path) on `layers`
and `data`; `training` (schedules, losses, callbacks) on `data` only; `converters` (models
of other toolkits into run directories) on `models`, `layers`, `data`, `training` and
`config`. The modules above them (`models`, `export`, `config`, `evaluation`) may combine
them; the `runner` (what each command does, as library calls) builds on all of these,
only the command line (`kerasnmt.cli`) imports the runner, and no module imports the
command line. Imports inside functions count as well.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# The parts of kerasnmt (`kerasnmt.<part>`) that the modules of a subpackage may import.
ALLOWED_IMPORTS = {
    "data": {"data"},
    "layers": {"layers", "data"},
    "decoding": {"decoding", "layers", "data"},
    "training": {"training", "data"},
    "converters": {"converters", "models", "layers", "data", "training", "config"},
    "runner": {"runner", "models", "decoding", "export", "training", "data", "layers",
               "config", "evaluation", "converters", "xla_compilation_cache"},
}


def kerasnmt_imports(path, root):
    """`(line, module)` for every import of kerasnmt in `path`, relative imports resolved.

    `from kerasnmt import data` imports `kerasnmt.data`; `import kerasnmt` gives
    `kerasnmt`, the package that imports all the others.
    """
    package = path.relative_to(root).parent.parts  # ("kerasnmt", "data") for data's files
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:
                anchor = ".".join(package[: len(package) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            names = [base]
            if base == "kerasnmt":  # `from kerasnmt import data`: the subpackage imported
                names = [f"kerasnmt.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name == "kerasnmt" or name.startswith("kerasnmt."):
                yield node.lineno, name


def part_of(module):
    """`data` for `kerasnmt.data.vocabulary`, `cli` for `kerasnmt.cli`."""
    return module.split(".")[1] if "." in module else module


def forbidden_imports(root, part, allowed):
    """One line, `FILE:LINE: imports MODULE; ...`, per import of `kerasnmt.<part>`'s files
    outside `allowed`."""
    return [
        f"{path.relative_to(root)}:{line}: imports {module}; kerasnmt.{part} may import only "
        + ", ".join(f"kerasnmt.{name}" for name in sorted(allowed))
        for path in sorted((root / "kerasnmt" / part).rglob("*.py"))
        for line, module in kerasnmt_imports(path, root)
        if part_of(module) not in allowed
    ]


@pytest.mark.parametrize("part", sorted(ALLOWED_IMPORTS))
def test_a_subpackage_imports_only_the_parts_below_it(part):
    violations = forbidden_imports(ROOT, part, ALLOWED_IMPORTS[part])
    assert not violations, "\n".join(violations)


def test_no_module_imports_the_command_line():
    violations = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}; only the command line is above it"
        for path in sorted((ROOT / "kerasnmt").rglob("*.py"))
        if path != ROOT / "kerasnmt" / "cli.py"
        for line, module in kerasnmt_imports(path, ROOT)
        if part_of(module) == "cli"
    ]
    assert not violations, "\n".join(violations)


def test_only_the_command_line_imports_the_runner():
    violations = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}; only the command line is above it"
        for path in sorted((ROOT / "kerasnmt").rglob("*.py"))
        if path != ROOT / "kerasnmt" / "cli.py" and "runner" not in path.relative_to(ROOT).parts
        for line, module in kerasnmt_imports(path, ROOT)
        if part_of(module) == "runner"
    ]
    assert not violations, "\n".join(violations)


def test_forbidden_imports_names_the_file_the_line_and_the_import(tmp_path):
    (tmp_path / "kerasnmt" / "data").mkdir(parents=True)
    (tmp_path / "kerasnmt" / "data" / "pipeline.py").write_text(
        "import os\n"
        "from kerasnmt.data import vocabulary\n"
        "from kerasnmt.layers.vocab_lookup import UNKNOWN_TOKEN\n"
        "def lazy():\n"
        "    from .. import models\n"
        "    from .shards import write_shards\n"
    )
    assert forbidden_imports(tmp_path, "data", {"data"}) == [
        "kerasnmt/data/pipeline.py:3: imports kerasnmt.layers.vocab_lookup; "
        "kerasnmt.data may import only kerasnmt.data",
        "kerasnmt/data/pipeline.py:5: imports kerasnmt.models; "
        "kerasnmt.data may import only kerasnmt.data",
    ]


def test_every_public_keras_layer_and_model_is_registered_for_serialization():
    """`.keras` files name them `kerasnmt>Name` (a decorator moved off its class fails this)."""
    import keras

    import kerasnmt.decoding
    import kerasnmt.layers
    import kerasnmt.models

    for module in (kerasnmt.decoding, kerasnmt.layers, kerasnmt.models):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, keras.layers.Layer):
                assert keras.saving.get_registered_name(value) == f"kerasnmt>{name}", name


def test_the_command_line_starts_without_importing_the_moses_scripts():
    """sacremoses (a third of a second to import) is imported by the scoring that uses
    it, not by every `kerasnmt` command at start-up."""
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, kerasnmt.cli; print('sacremoses' in sys.modules)"],
        capture_output=True, text=True, timeout=300, check=True).stdout.split()
    assert imported == ["False"]
    from kerasnmt.evaluation import lowercase_and_moses_tokenize

    assert lowercase_and_moses_tokenize(["It's a Test."]) == ["it 's a test ."]
