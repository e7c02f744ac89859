"""`kerasnmt prepare`: shards from the command line, its progress, and its bad-input
errors."""

import re

import tensorflow as tf

from kerasnmt.cli import main
from kerasnmt.data.shards import load_shards_index, read_shards
from kerasnmt.data.vocabulary import save_vocabulary
from tests.layers import tiny_sentencepiece


def _files(tmp_path, source_lines, target_lines):
    source, target = tmp_path / "train.src", tmp_path / "train.tgt"
    source.write_text("".join(line + "\n" for line in source_lines))
    target.write_text("".join(line + "\n" for line in target_lines))
    save_vocabulary(["<blank>", "<s>", "</s>", "a", "b"], str(tmp_path / "vocab.src"))
    save_vocabulary(["<blank>", "<s>", "</s>", "x", "y"], str(tmp_path / "vocab.tgt"))
    return [
        str(source), str(target),
        "--source-vocabulary", str(tmp_path / "vocab.src"),
        "--target-vocabulary", str(tmp_path / "vocab.tgt"),
    ]


def test_prepare_writes_shards_of_ids(tmp_path, capsys):
    arguments = _files(tmp_path, ["a b", "b", "a a a"], ["x", "y x", "q"])
    status = main(
        ["prepare", *arguments, "-o", str(tmp_path / "shards"), "--name", "corpus",
         "--num-shards", "2", "--no-shuffle"]
    )
    assert status == 0
    assert "wrote 2 shards" in capsys.readouterr().out
    index = load_shards_index(str(tmp_path / "shards" / "corpus.index.json"))
    assert [shard["num_examples"] for shard in index["shards"]] == [1, 2]
    examples = [
        tf.nest.map_structure(lambda v: v.tolist(), example)
        for example in read_shards(str(tmp_path / "shards")).as_numpy_iterator()
    ]
    # "q" is not in the target vocabulary: the unknown id is 5, the vocabulary size.
    assert [(f["ids"], l["ids_out"]) for f, l in examples] == [
        ([3, 4], [3, 2]), ([4], [4, 3, 2]), ([3, 3, 3], [5, 2])
    ]


def test_prepare_reports_mismatched_files_in_one_line(tmp_path, capsys):
    arguments = _files(tmp_path, ["a", "b", "a"], ["x", "y"])
    status = main(["prepare", *arguments, "-o", str(tmp_path / "shards")])
    assert status == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("kerasnmt prepare: error:") and "\n" not in error
    assert "train.src has 3 lines but" in error and "train.tgt has 2" in error


def test_prepare_refuses_an_empty_corpus_and_writes_nothing(tmp_path, capsys):
    arguments = _files(tmp_path, [], [])
    status = main(["prepare", *arguments, "-o", str(tmp_path / "shards"), "--num-shards", "2"])
    assert status == 2
    error = capsys.readouterr().err.strip()
    assert error == f"kerasnmt prepare: error: {tmp_path / 'train.src'} is empty: no sentence pair to prepare"
    assert not (tmp_path / "shards").exists()


def test_prepare_takes_the_preprocessing_of_a_run_configuration(tmp_path, capsys):
    from kerasnmt.config import load_config
    from kerasnmt.data.shards import preprocessor_fingerprint
    from kerasnmt.runner.run_model import build_preprocessor

    arguments = _files(tmp_path, ["a b", "b"], ["x", "y x"])
    run = tmp_path / "run.yml"
    run.write_text("data:\n  source_vocabulary: vocab.src\n  target_vocabulary: vocab.tgt\n")
    status = main(["prepare", *arguments[:2], "--config", str(run), "-o", str(tmp_path / "s")])
    assert status == 0, capsys.readouterr().err
    index = load_shards_index(str(tmp_path / "s"))
    assert index["preprocessor"] == preprocessor_fingerprint(build_preprocessor(load_config(run)))
    status = main(["prepare", *arguments, "--config", str(run), "-o", str(tmp_path / "t")])
    assert status == 2
    assert "--config takes the preprocessing from" in capsys.readouterr().err
    status = main(["prepare", *arguments[:2], "-o", str(tmp_path / "t")])
    assert status == 2
    assert "give --source-vocabulary and --target-vocabulary, or --config" in capsys.readouterr().err


def test_prepare_is_quiet_off_a_terminal_and_ends_with_a_summary(tmp_path, capsys):
    arguments = _files(tmp_path, ["a b", "b", "a a a"], ["x", "y x", "q"])
    status = main(["prepare", *arguments, "-o", str(tmp_path / "shards"), "--num-shards", "2"])
    captured = capsys.readouterr()
    assert status == 0 and captured.err == ""
    assert re.fullmatch(rf"wrote 2 shards and {re.escape(str(tmp_path))}/shards/train\.index"
                        r"\.json: 3 examples in \d+\.\d s \(\d+ examples/s, 1 process\)\n", captured.out)


def test_prepare_prints_a_line_every_n_examples_off_a_terminal(tmp_path, capsys):
    """Two shards of 1 and 2 examples, written by one process, a line every example: at 1
    and at 3 (the second shard's chunk passes 2 and 3 at once)."""
    arguments = _files(tmp_path, ["a b", "b", "a a a"], ["x", "y x", "q"])
    status = main(["prepare", *arguments, "-o", str(tmp_path / "shards"), "--num-shards", "2",
                   "--progress-every", "1"])
    captured = capsys.readouterr()
    assert status == 0
    lines = captured.err.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"job 1/1: 1/3 examples \(33%\), \d+ examples/s, ETA \w+", lines[0])
    assert re.fullmatch(r"job 1/1: 3/3 examples \(100%\), \d+ examples/s, ETA 0s", lines[1])


def test_prepare_refuses_a_byte_fallback_model_with_a_vocabulary_without_byte_pieces(
        tmp_path, capsys):
    arguments = _files(tmp_path, ["a b"], ["x"])
    model = tmp_path / "bytes.model"
    model.write_bytes(tiny_sentencepiece.train("unigram", 300, tuple(["a b a", "b a"] * 10),
                                               byte_fallback=True, hard_vocab_limit=False))
    status = main(["prepare", *arguments, "-o", str(tmp_path / "shards"),
                   "--source-sentencepiece", str(model)])
    error = capsys.readouterr().err
    assert status == 2 and error.count("\n") == 1
    assert error.startswith(f"kerasnmt prepare: error: {model} encodes unseen characters as "
                            f"byte pieces (byte fallback), but {tmp_path / 'vocab.src'} lacks "
                            "256 of the 256")
    assert not (tmp_path / "shards").exists()
