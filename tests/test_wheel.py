"""The wheel a user installs: built by `python -m build` from the package's files alone,
installed into a fresh virtual environment (no clone, no editable install), then
`kerasnmt --help` and a translation through a SavedModel, run outside the repository.

The fresh environment takes the dependencies from this one's site-packages through a
`.pth` path entry: that makes them importable without running this environment's own
`.pth` files, so the editable install of the repository stays out of it."""

import os
import pathlib
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile

import pytest

import kerasnmt
from kerasnmt.decoding import BeamSampler
from tests.models.translator_fixtures import SPECIALS, TARGET_WORDS, forbid_outside, tiny_translator

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(34)

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]
# What `python -m build` reads: the package and the files pyproject.toml names.
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "kerasnmt")
SENTENCES = ["a b c", "d e", "h g f e d c b a"]


def _run(command, **options):
    """Runs `command`, failing the test with its output when it fails."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                            timeout=600, **options)
    assert result.returncode == 0, f"{command}: {result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        path = REPOSITORY / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, source / name)
    dist = tmp_path_factory.mktemp("dist")
    # Without isolation: the build tools of the test extra, nothing downloaded.
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, source])
    (path,) = dist.glob("*.whl")
    return path


@pytest.fixture(scope="module")
def environment(wheel, tmp_path_factory):
    """A fresh virtual environment with the wheel installed; returns its `bin` directory."""
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", root])
    python = root / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
          "--no-index", wheel])
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    dependencies = [*site.getsitepackages(), sysconfig.get_path("purelib")]
    (pathlib.Path(purelib.stdout.strip()) / "dependencies.pth").write_text(
        "".join(f"{path}\n" for path in dict.fromkeys(dependencies)))
    return root / "bin"


def _outside_the_repository(tmp_path):
    """The environment and working directory of a user's process: not in the repository,
    no PYTHONPATH."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return dict(cwd=tmp_path, env=env)


def test_the_wheel_holds_every_file_of_the_package_its_licence_and_its_command(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {str(path.relative_to(REPOSITORY)) for path in (REPOSITORY / "kerasnmt").rglob("*")
               if path.is_file() and "__pycache__" not in path.parts}
    assert package <= names
    dist_info = f"kerasnmt-{kerasnmt.__version__}.dist-info"
    assert f"{dist_info}/licenses/LICENSE" in names
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "kerasnmt = kerasnmt.cli:console_main" in entry_points


def test_the_installed_command_runs_from_the_wheel(environment, tmp_path):
    where = _outside_the_repository(tmp_path)
    imported = _run([environment / "python", "-c",
                     "import kerasnmt; print(kerasnmt.__file__, kerasnmt.__version__)"], **where)
    module, version = imported.stdout.split()
    assert pathlib.Path(module).is_relative_to(environment.parent)
    assert version == kerasnmt.__version__
    usage = _run([environment / "kerasnmt", "--help"], **where)
    assert usage.stdout.startswith("usage: kerasnmt")


def test_the_installed_command_translates_with_a_saved_model(environment, tmp_path):
    translator = tiny_translator(seed=3)
    # Target words only, no </s>: each translation is eight words the weights choose.
    forbid_outside(translator, range(len(SPECIALS), len(SPECIALS) + len(TARGET_WORDS)))
    sampler = BeamSampler(beam_size=2, max_length=8)
    saved_model = tmp_path / "saved_model"
    translator.export(saved_model, sampler=sampler, jit_compile=False, warmup=False)
    (tmp_path / "source.txt").write_text("".join(f"{line}\n" for line in SENTENCES))
    _run([environment / "kerasnmt", "translate", "--saved-model", saved_model,
          "--input", "source.txt", "--output", "translations.txt"],
         **_outside_the_repository(tmp_path))
    expected = translator.translate(SENTENCES, sampler=sampler, jit_compile=False)
    assert [len(translation.split()) for translation in expected] == [8, 8, 8]
    assert (tmp_path / "translations.txt").read_text().splitlines() == expected
