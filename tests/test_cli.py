import gzip
import json
import os
import subprocess
import sys

import pytest
import sentencepiece

from kerasnmt import cli
from kerasnmt.data.vocabulary import load_vocabulary

SPECIALS = ["<blank>", "<s>", "</s>"]
SENTENCES = [
    "Two young guys with shaggy hair look at their hands while hanging out in the yard.",
    "Several men in hard hats are operating a giant pulley system.",
    "A little girl climbing into a wooden playhouse.",
    "A man in a blue shirt is standing on a ladder cleaning a window.",
    "Two men are at the stove preparing food.",
    "A man in green holds a guitar while the other man observes his shirt.",
    "A man is smiling at a stuffed lion.",
    "A trendy girl talking on her cellphone while gliding slowly down the street.",
    "A woman with a large purse is walking by a gate.",
    "Boys dancing on poles in the middle of the night.",
]


@pytest.fixture
def tokenized(tmp_path):
    """Hand count: the 4; a 2, cat 2, dog 2; and 1, end 1, mat 1, on 1, sat 1."""
    first = tmp_path / "train.tok"
    first.write_text("the cat sat on the mat\n\n   \nthe dog\n", encoding="utf-8")
    second = tmp_path / "more.tok.gz"
    second.write_bytes(gzip.compress(b"a cat and a dog\n\t\nthe end\n"))
    return [str(first), str(second)]


@pytest.fixture
def raw(tmp_path):
    path = tmp_path / "train.en"
    path.write_text("\n".join(SENTENCES * 3) + "\n", encoding="utf-8")
    return str(path)


def run_cli(capsys, *argv):
    status = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_usage_error(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([str(arg) for arg in argv])
    return exit_info.value.code, capsys.readouterr().err


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["build-vocab", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in ["--output", "--size", "--min-frequency", "--size-multiple", "--sentencepiece",
                   "--file-byte-budget", "--model-type", "--character-coverage", "--utf8-errors",
                   "--no-byte-fallback"]:
        assert option in text
    assert "counting <blank>, <s>, </s>" in text
    assert "averyunlikelytoken0" in text


def test_top_level_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "build-vocab" in out and "check-vocab" in out


def test_a_subcommand_is_required(capsys):
    code, err = run_usage_error(capsys)
    assert code == 2
    assert "SUBCOMMAND" in err


def test_build_vocab_counts_tokens(tmp_path, capsys, tokenized):
    output = tmp_path / "vocab.txt"
    status, out, _ = run_cli(capsys, "build-vocab", *tokenized, "--output", output)
    assert status == 0
    assert load_vocabulary(output) == SPECIALS + [
        "the", "a", "cat", "dog", "and", "end", "mat", "on", "sat",
    ]
    assert out == f"wrote {output} (12 entries)\n"


def test_build_vocab_size_min_frequency_size_multiple(tmp_path, capsys, tokenized):
    output = tmp_path / "vocab.txt"
    assert run_cli(capsys, "build-vocab", *tokenized, "-o", output, "--size", 5)[0] == 0
    assert load_vocabulary(output) == SPECIALS + ["the", "a"]
    assert run_cli(capsys, "build-vocab", *tokenized, "-o", output, "--min-frequency", 2)[0] == 0
    assert load_vocabulary(output) == SPECIALS + ["the", "a", "cat", "dog"]
    # 12 entries + 1 = 13 -> 16: three fillers.
    assert run_cli(capsys, "build-vocab", *tokenized, "-o", output, "--size-multiple", 8)[0] == 0
    assert load_vocabulary(output)[12:] == [f"averyunlikelytoken{i}" for i in range(3)]


def test_build_vocab_target_size(tmp_path, capsys, tokenized):
    """Hand counts (the `tokenized` fixture): at least twice: the, a, cat, dog (7 entries);
    at least once: 9 tokens (12 entries)."""
    output = tmp_path / "vocab.txt"
    assert run_cli(capsys, "build-vocab", *tokenized, "-o", output, "--target-size", 8,
                   "--tolerance", 15)[0] == 0
    assert load_vocabulary(output) == SPECIALS + ["the", "a", "cat", "dog"]
    assert run_cli(capsys, "build-vocab", *tokenized, "-o", tmp_path / "exact", "--target-size",
                   12, "--tolerance", 0)[0] == 0
    assert len(load_vocabulary(tmp_path / "exact")) == 12
    status, _, err = run_cli(capsys, "build-vocab", *tokenized, "-o", tmp_path / "other",
                             "--target-size", 9, "--tolerance", 0)
    assert_one_line_error(status, err, "kerasnmt build-vocab: error:", "within 0% of 9 entries",
                          "the closest is 7 entries (tokens seen at least 2 times)")
    assert not (tmp_path / "other").exists()


def test_build_vocab_sentencepiece(tmp_path, capsys, raw):
    prefix = tmp_path / "sp"
    status, out, _ = run_cli(capsys, "build-vocab", raw, "-o", prefix, "--sentencepiece",
                             "--size", 45, "--size-multiple", 8, "--model-type", "bpe",
                             "--file-byte-budget", "all", "--no-byte-fallback")
    assert status == 0
    vocabulary = load_vocabulary(f"{prefix}.vocab")
    assert len(vocabulary) == 47  # 45 + 1 -> 48
    processor = sentencepiece.SentencePieceProcessor(model_file=f"{prefix}.model")
    assert vocabulary == SPECIALS + [processor.id_to_piece(i) for i in range(3, len(processor))]
    assert out == f"wrote {prefix}.model and {prefix}.vocab (47 entries)\n"


def test_build_vocab_sentencepiece_has_byte_fallback_by_default(tmp_path, capsys, raw):
    status, out, _ = run_cli(capsys, "build-vocab", raw, "-o", tmp_path / "sp", "--sentencepiece",
                             "--size", 320)
    assert status == 0 and out.endswith("(320 entries)\n")
    vocabulary = load_vocabulary(tmp_path / "sp.vocab")
    assert vocabulary[3:259] == [f"<0x{value:02X}>" for value in range(256)]
    processor = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    ids = processor.encode("Zoë in 東京")
    assert processor.unk_id() not in ids and processor.decode(ids) == "Zoë in 東京"
    status, _, _ = run_cli(capsys, "build-vocab", raw, "-o", tmp_path / "plain",
                           "--sentencepiece", "--size", 60, "--no-byte-fallback")
    assert status == 0
    assert "<0x00>" not in load_vocabulary(tmp_path / "plain.vocab")


@pytest.mark.parametrize("argv, fragments", [
    (["--size", "60"], ["Vocabulary size is smaller than required_chars",
                        "byte fallback adds the 256 byte pieces", "--no-byte-fallback"]),
    (["--size", "300", "--model-type", "word"], ["word model does not round-trip byte fallback",
                                                 "--no-byte-fallback"]),
])
def test_byte_fallback_misfits_are_one_line_errors(tmp_path, capsys, raw, argv, fragments):
    status, _, err = run_cli(capsys, "build-vocab", raw, "-o", tmp_path / "sp", "--sentencepiece",
                             *argv)
    assert_one_line_error(status, err, "kerasnmt build-vocab: error:", *fragments)
    assert not (tmp_path / "sp.model").exists()


def test_sentencepiece_byte_budget_all_samples_every_line(tmp_path, capsys, raw):
    """`--file-byte-budget all` takes every line (no budget), the default 1e6 characters."""
    for budget, recorded in (["--file-byte-budget", "all"], None), ([], 1e6):
        prefix = tmp_path / f"sp{len(budget)}"
        status, _, err = run_cli(capsys, "build-vocab", raw, "-o", prefix, "--sentencepiece",
                                 "--size", 320, *budget)
        assert status == 0, err
        record = json.loads((tmp_path / f"{prefix.name}.build.json").read_text(encoding="utf-8"))
        assert record["options"]["file_byte_budget"] == recorded


def test_sentencepiece_byte_budget_is_passed_on(tmp_path, capsys, raw):
    # A budget of 1 character: countermax = int(size / 2) skips every line of the file but
    # none is taken, so SentencePiece gets nothing.
    status, _, err = run_cli(capsys, "build-vocab", raw, "-o", tmp_path / "sp", "--sentencepiece",
                             "--size", 40, "--file-byte-budget", 1)
    assert status == 2
    assert "no text to train SentencePiece on" in err


@pytest.mark.parametrize("argv, message", [
    (["--sentencepiece"], "--sentencepiece needs --size"),
    (["--sentencepiece", "--size", "40", "--min-frequency", "2"],
     "--min-frequency does not apply to --sentencepiece"),
    (["--model-type", "bpe"], "--model-type needs --sentencepiece"),
    (["--file-byte-budget", "1e6"], "--file-byte-budget needs --sentencepiece"),
    (["--file-byte-budget", "all"], "--file-byte-budget needs --sentencepiece"),
    (["--character-coverage", "0.99"], "--character-coverage needs --sentencepiece"),
    (["--no-byte-fallback"], "--no-byte-fallback needs --sentencepiece"),
    (["--tolerance", "5"], "--tolerance needs --target-size"),
    (["--target-size", "8", "--size", "9"], "--target-size chooses the minimum frequency"),
    (["--target-size", "8", "--tolerance", "-1"], "--tolerance must be a percentage"),
    (["--sentencepiece", "--size", "300", "--target-size", "8"],
     "--target-size and --tolerance do not apply to --sentencepiece"),
    (["--size", "0"], "--size: must be a positive integer"),
    (["--size-multiple", "-8"], "--size-multiple: must be a positive integer"),
    (["--sentencepiece", "--size", "40", "--file-byte-budget", "0"],
     "--file-byte-budget: must be a positive number or 'all'"),
    (["--model-type", "wordpiece"], "invalid choice: 'wordpiece'"),
])
def test_option_misuse_is_a_usage_error(tmp_path, capsys, tokenized, argv, message):
    code, err = run_usage_error(capsys, "build-vocab", *tokenized, "-o", tmp_path / "v", *argv)
    assert code == 2
    assert message in err
    assert not (tmp_path / "v").exists()


def assert_one_line_error(status, err, *fragments):
    assert status == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kerasnmt ")
    assert ": error: " in lines[0]
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("language", ["EN", "german", "d", ""])
def test_evaluate_refuses_what_is_not_a_moses_language_code(tmp_path, capsys, language):
    # sacremoses would take "EN" or "german" without a word, half as English (its
    # nonbreaking prefixes) and half not (its apostrophe rule tests `lang == "en"`).
    text = tmp_path / "text.de"
    text.write_text("Ein Hund.\n", encoding="utf-8")
    code, err = run_usage_error(capsys, "evaluate", "--language", language, text, text)
    assert code == 2
    assert "argument --language: expected a language code for the Moses tokenizer" in err
    assert f"got {language!r}" in err


def test_evaluate_takes_a_moses_language_code(tmp_path, capsys):
    text = tmp_path / "text.de"
    text.write_text("Ein Hund läuft im Park.\n", encoding="utf-8")
    assert cli.main(["evaluate", "--language", "cs", str(text), str(text)]) == 0
    assert "BLEU tokenized lc = 100.00  moses:lc+norm+tok|lang:cs|" in capsys.readouterr().out


def test_non_utf8_corpus_line(tmp_path, capsys):
    path = tmp_path / "bad.tok"
    path.write_bytes(b"good line\n\nbad \xc3\x28 line\n")
    status, _, err = run_cli(capsys, "build-vocab", path, "-o", tmp_path / "v")
    assert_one_line_error(status, err, "kerasnmt build-vocab: error:", f"{path}, line 3",
                          "not valid UTF-8", "offset 4 of the line")
    assert not (tmp_path / "v").exists()


def test_non_utf8_corpus_line_replaced_on_request(tmp_path, capsys):
    path = tmp_path / "bad.tok"
    path.write_bytes(b"bad \xc3\x28 line\n")
    status, _, _ = run_cli(capsys, "build-vocab", path, "-o", tmp_path / "v",
                           "--utf8-errors", "replace")
    assert status == 0
    # U+FFFD replaces the lone \xc3 only; "(" stays in the same token.
    assert load_vocabulary(tmp_path / "v") == SPECIALS + ["bad", "line", "\ufffd("]


@pytest.mark.parametrize("sentencepiece_options", [[], ["--sentencepiece", "--size", "320"]])
def test_empty_corpus(tmp_path, capsys, sentencepiece_options):
    path = tmp_path / "empty.txt"
    path.write_text("\n   \n\t\n", encoding="utf-8")
    status, _, err = run_cli(capsys, "build-vocab", path, "-o", tmp_path / "v",
                             *sentencepiece_options)
    assert_one_line_error(status, err, str(path), "only empty or whitespace-only lines")


def test_missing_input_file(tmp_path, capsys):
    status, _, err = run_cli(capsys, "build-vocab", tmp_path / "nope.txt", "-o", tmp_path / "v")
    assert_one_line_error(status, err, "No such file or directory", "nope.txt")


def test_check_vocab_accepts_a_good_file(tmp_path, capsys):
    path = tmp_path / "vocab.txt"
    path.write_text("<blank>\n<s>\n</s>\n▁he\n▁can\n", encoding="utf-8")
    status, out, _ = run_cli(capsys, "check-vocab", path)
    assert status == 0
    assert out == f"{path}: 5 entries, 6 ids with the unknown token\n"


def test_check_vocab_duplicate_token(tmp_path, capsys):
    path = tmp_path / "vocab.txt"
    path.write_text("<blank>\n<s>\n</s>\nx\ny\nx\n", encoding="utf-8")
    status, _, err = run_cli(capsys, "check-vocab", path)
    assert_one_line_error(status, err, "kerasnmt check-vocab: error:",
                          "line 6: duplicate token 'x' (first seen on line 4)")


def test_check_vocab_missing_special_tokens(tmp_path, capsys):
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    status, _, err = run_cli(capsys, "check-vocab", path)
    assert_one_line_error(status, err, "must start with <blank>, <s>, </s>")


def test_command_line_process_exits_2_without_traceback(tmp_path):
    path = tmp_path / "bad.tok"
    path.write_bytes(b"ok\n\xff\n")
    result = subprocess.run(
        [sys.executable, "-m", "kerasnmt.cli", "build-vocab", str(path), "-o",
         str(tmp_path / "v")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    # TensorFlow may log while kerasnmt imports; the command's own message is one line, last.
    errors = [line for line in result.stderr.splitlines() if line.startswith("kerasnmt")]
    assert errors == [result.stderr.splitlines()[-1]]
    assert f"{path}, line 2: not valid UTF-8" in errors[0]


def test_the_command_ends_after_its_output_and_exit_handlers(tmp_path):
    """`console_main` (the `kerasnmt` command) ends the process without tearing TensorFlow
    down, but only once what the command printed is flushed and the exit handlers (such
    as the XLA cache's record) have run, with the command's status; the objects that
    existed before the command are out of garbage collection (`gc.freeze`)."""
    tokens, vocabulary = tmp_path / "train.tok", tmp_path / "vocab.txt"
    tokens.write_text("a b\nb c\n", encoding="utf-8")
    script = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('exit handler ran, frozen:', gc.get_freeze_count() > 0))\n"
        "from kerasnmt.cli import console_main\n"
        f"sys.argv = ['kerasnmt', 'build-vocab', {str(tokens)!r}, '-o', {str(vocabulary)!r}]\n"
        "console_main()\n"
        "print('after the command')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [f"wrote {vocabulary} (6 entries)",
                                          "exit handler ran, frozen: True"]


def test_build_vocab_reuses_a_vocabulary_built_from_the_same_inputs(tmp_path, capsys, tokenized):
    """Get or generate: the same files and options reuse the vocabulary (one line); a
    touched input too; a changed input, option or output builds it again, saying why;
    --force builds it whatever the record says."""
    output = tmp_path / "vocab.txt"
    argv = ["build-vocab", *tokenized, "-o", output, "--min-frequency", 2]
    status, out, _ = run_cli(capsys, *argv)
    assert status == 0 and out == f"wrote {output} (7 entries)\n"
    record = json.loads((tmp_path / "vocab.txt.build.json").read_text(encoding="utf-8"))
    assert [entry["path"] for entry in record["inputs"]] == tokenized
    assert record["options"]["min_frequency"] == 2
    written = output.stat().st_mtime_ns

    os.utime(tokenized[0], ns=(written + 10**9, written + 10**9))  # touched, not changed
    status, out, _ = run_cli(capsys, *argv)
    assert status == 0 and out == (f"{output} up to date: built from the same files and "
                                   f"options ({output}.build.json); --force builds again\n")
    assert output.stat().st_mtime_ns == written

    status, out, _ = run_cli(capsys, *argv, "--force")
    assert out == f"wrote {output} (7 entries)\n"

    status, out, _ = run_cli(capsys, *argv[:-1], 1)
    assert out.splitlines() == [
        f"building {output} again: option min_frequency was 2, now 1",
        f"wrote {output} (12 entries)"]

    with open(tokenized[0], "a", encoding="utf-8") as file:
        file.write("mat mat mat\n")
    status, out, _ = run_cli(capsys, *argv[:-1], 1)
    assert out.splitlines()[0] == (f"building {output} again: input {tokenized[0]} changed "
                                   "since the build")
    assert load_vocabulary(output)[3] == "mat"

    output.write_text("\n".join(SPECIALS + ["edited"]) + "\n", encoding="utf-8")
    status, out, _ = run_cli(capsys, *argv[:-1], 1)
    assert out.splitlines()[0] == f"building {output} again: {output} changed since the build"
    assert "edited" not in load_vocabulary(output)


def test_build_vocab_reuses_a_sentencepiece_model(tmp_path, capsys, raw):
    prefix = tmp_path / "sp"
    argv = ["build-vocab", raw, "-o", prefix, "--sentencepiece", "--size", 320]
    assert run_cli(capsys, *argv)[1] == f"wrote {prefix}.model and {prefix}.vocab (320 entries)\n"
    model = (tmp_path / "sp.model").read_bytes()
    assert run_cli(capsys, *argv)[1].startswith(f"{prefix}.model and {prefix}.vocab up to date")
    (tmp_path / "sp.model").unlink()
    status, out, _ = run_cli(capsys, *argv)
    assert out.splitlines() == [f"building {prefix}.model and {prefix}.vocab again: "
                                f"{prefix}.model does not exist",
                                f"wrote {prefix}.model and {prefix}.vocab (320 entries)"]
    assert (tmp_path / "sp.model").read_bytes() == model  # the same inputs, the same model
    status, out, _ = run_cli(capsys, *argv, "--no-byte-fallback", "--size", 60)
    assert out.splitlines()[0].endswith("again: option byte_fallback was True, now False")
