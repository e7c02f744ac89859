"""The export formats' registry: what each format takes, and what `kerasnmt export` says
of the rest before it reads anything."""

import pytest

from kerasnmt import cli
from kerasnmt.export.formats import ALL_QUANTIZATIONS, EXPORT_FORMATS, FORMAT_OPTIONS


def test_each_format_refuses_the_options_of_the_other_by_name():
    savedmodel, ctranslate2 = EXPORT_FORMATS["savedmodel"], EXPORT_FORMATS["ctranslate2"]
    assert savedmodel.refusals({"force": True, "no_xla": True, "shortlist": None}) == [
        "--force does not apply to --format savedmodel (it goes with --format ctranslate2, "
        "keras-hub)"]
    assert ctranslate2.refusals({"force": True, "no_warmup": True, "with_alignments": False}) == [
        "--no-warmup does not apply to --format ctranslate2 (it goes with --format savedmodel)"]
    assert savedmodel.quantization_refusal("int8") is None
    assert savedmodel.quantization_refusal(None) is None
    assert savedmodel.quantization_refusal("float16") == (
        "--quantization float16 goes with --format ctranslate2 (--format savedmodel takes int8)")
    assert ctranslate2.quantization_refusal("int8_float32") is None


def test_every_format_option_is_an_export_argument_some_format_takes():
    parser = cli.make_parser()
    export = parser._subparsers._group_actions[0].choices["export"]
    destinations = {action.dest: action for action in export._actions}
    for option in FORMAT_OPTIONS:
        assert option in destinations, option
        assert any(option in export_format.options for export_format in EXPORT_FORMATS.values())
    assert sorted(destinations["format"].choices) == sorted(EXPORT_FORMATS)
    assert tuple(destinations["quantization"].choices) == ALL_QUANTIZATIONS


@pytest.mark.parametrize("argv, message", [
    (["--format", "onnx"], "argument --format: invalid choice: 'onnx' (choose from "
                           "'ctranslate2', 'keras-hub', 'savedmodel')"),
    (["--format", "ctranslate2", "--no-xla", "--early-exit"],
     "--early-exit does not apply to --format ctranslate2 (it goes with --format savedmodel, "
     "keras-hub); --no-xla does not apply to --format ctranslate2"),
])
def test_the_command_refuses_before_reading_the_model(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["export", str(tmp_path / "out"), "--model", str(tmp_path / "none.keras"),
                  *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
