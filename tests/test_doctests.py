"""Every module of kerasnmt shows its use in `>>>` examples, and every example runs."""

import doctest
import importlib
import pkgutil

import pytest

import kerasnmt

# Modules that need an optional extra, and the module that extra installs.
OPTIONAL_DEPENDENCIES = {"kerasnmt.data.beam_shards": "apache_beam"}

# Packages only re-export their modules' names: their modules carry the examples.
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(kerasnmt.__path__, "kerasnmt.")
    if not info.ispkg
)


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    if module_name in OPTIONAL_DEPENDENCIES:
        pytest.importorskip(OPTIONAL_DEPENDENCIES[module_name])
    module = importlib.import_module(module_name)
    results = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0, f"{module_name} has no >>> example"
    assert results.failed == 0, f"{results.failed} example(s) of {module_name} failed"
