"""Every module of kerasnmt shows its use in `>>>` examples, and every example runs."""

import ast
import doctest
import importlib
import pathlib
import pkgutil

import pytest

import kerasnmt

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(35)

# Modules that need an optional extra, and the module that extra installs.
OPTIONAL_DEPENDENCIES = {"kerasnmt.data.beam_shards": "apache_beam"}

# Packages only re-export their modules' names (checked below): their modules carry the
# examples.
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(kerasnmt.__path__, "kerasnmt.")
    if not info.ispkg
)
PACKAGE_FILES = sorted(pathlib.Path(kerasnmt.__file__).parent.rglob("__init__.py"))


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    if module_name in OPTIONAL_DEPENDENCIES:
        pytest.importorskip(OPTIONAL_DEPENDENCIES[module_name])
    module = importlib.import_module(module_name)
    results = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0, f"{module_name} has no >>> example"
    assert results.failed == 0, f"{results.failed} example(s) of {module_name} failed"


@pytest.mark.parametrize("path", PACKAGE_FILES, ids=lambda path: path.parent.name)
def test_packages_only_re_export(path):
    for statement in ast.parse(path.read_text(encoding="utf-8")).body:
        docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        names = [target.id for target in getattr(statement, "targets", []) if hasattr(target, "id")]
        assert docstring or isinstance(statement, (ast.Import, ast.ImportFrom)) or (
            names and set(names) <= {"__all__", "__version__"}
        ), f"{path}:{statement.lineno} defines code, which needs a module of its own with examples"
