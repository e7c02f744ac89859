"""The text Wu et al. (2021) train and score on, made from the raw Multi30k corpus, and
their translations made readable again.

`prepare` writes, for each `*.en`/`*.de` file of `--data-dir` (and of its `blind/`), each
line lowercased, its punctuation normalized and Moses-tokenized with XML escapes
(`kerasnmt.evaluation.lowercase_and_moses_tokenize`, `'` as `&apos;`), then split by a
joint subword-nmt BPE of `--merges` merges learned on the two training files (`@@ `
joins the pieces of a word), and the BPE codes (`code`). On Multi30k this reproduces the
authors' `data/multi30k-en-de/` (github.com/LividWo/Revisit-MMT: `code`, `train`, `valid`
and `test.2016`, both languages) byte for byte. kerasnmt then trains on it with
whitespace tokenization (`examples/multi30k_tiny/run_paper_text.yml`).

`decode` undoes it on translations: joiners removed (fairseq's `--remove-bpe`), tokens
Moses-detokenized (escapes undone); the text stays lowercased.

Needs `subword-nmt` (`pip install kerasnmt[subword-nmt]`).

    python examples/multi30k_tiny/paper_text.py prepare --data-dir data/multi30k \\
        --output-dir runs/multi30k_paper/data
    python examples/multi30k_tiny/paper_text.py decode --language de IN.bpe.de OUT.de
"""

import argparse
import contextlib
import io
import os
import re
import sys

from sacremoses import MosesDetokenizer
from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from kerasnmt.data.result_file import result_file
from kerasnmt.data.text_files import read_line_aligned, read_lines
from kerasnmt.evaluation import lowercase_and_moses_tokenize

JOINER = re.compile(r"@@( |$)")


def read_text(path):
    """The lines of a UTF-8 text file (`kerasnmt.data.text_files.read_lines`)."""
    return [text for _, text in read_lines(path)]


def write_text(path, lines):
    """Writes `lines` to `path` whole or not at all (`kerasnmt.data.result_file`)."""
    with result_file(path, expected_lines=len(lines)) as stream:
        stream.writelines(line + "\n" for line in lines)


def learn_codes(lines, merges):
    """The BPE codes (subword-nmt's format) of `merges` merges learned on `lines`."""
    codes = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()):  # its progress bar
        learn_bpe(iter(line + "\n" for line in lines), codes, merges)
    return codes.getvalue()


def apply_codes(codes, lines):
    """`lines` split by the BPE `codes`, `@@ ` joining the pieces of a word.

    >>> apply_codes("#version: 0.2\\nl o\\nlo w</w>\\n", ["low lower"])
    ['low lo@@ w@@ e@@ r']
    """
    bpe = BPE(io.StringIO(codes))
    return [bpe.process_line(line) for line in lines]


def decode(lines, language):
    """Translations made readable: BPE joiners removed, Moses-detokenized.

    >>> decode(["ein spiel@@ zeug &quot; hier &quot; ."], "de")
    ['ein spielzeug "hier".']
    """
    detokenizer = MosesDetokenizer(lang=language)
    return [detokenizer.detokenize(JOINER.sub("", line).split()) for line in lines]


def corpus_files(data_dir):
    """The `*.en` and `*.de` files of `data_dir` and of its `blind/`, relative to it."""
    names = []
    for folder in ("", "blind"):
        directory = os.path.join(data_dir, folder)
        if os.path.isdir(directory):
            names += [os.path.join(folder, name) for name in sorted(os.listdir(directory))
                      if name.endswith((".en", ".de"))]
    return names


def read_corpus(data_dir, names):
    """`{name: lines}` of the files `names` of `data_dir`; the two sides of a pair
    (`NAME.en`, `NAME.de`) must have one line each (`read_line_aligned`)."""
    texts = {}
    for name in names:
        if name in texts:
            continue
        other = name[:-2] + ("de" if name.endswith(".en") else "en")
        if other in names:
            texts[name], texts[other] = read_line_aligned(
                os.path.join(data_dir, name), os.path.join(data_dir, other))
        else:
            texts[name] = read_text(os.path.join(data_dir, name))
    return texts


def prepare(data_dir, output_dir, merges):
    names = corpus_files(data_dir)
    for side in ("train.en", "train.de"):
        if side not in names:
            raise ValueError(f"{data_dir}: no {side}")
    tokenized = {name: lowercase_and_moses_tokenize(lines, name[-2:], escape=True)
                 for name, lines in read_corpus(data_dir, names).items()}
    codes = learn_codes(tokenized["train.en"] + tokenized["train.de"], merges)
    os.makedirs(output_dir, exist_ok=True)
    write_text(os.path.join(output_dir, "code"), codes.splitlines())
    for name, lines in tokenized.items():
        os.makedirs(os.path.dirname(os.path.join(output_dir, name)), exist_ok=True)
        write_text(os.path.join(output_dir, name), apply_codes(codes, lines))
    print(f"wrote {len(names)} files and code ({merges} merges) to {output_dir}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_parser = commands.add_parser("prepare", help="lowercase, tokenize, learn and "
                                         "apply the joint BPE")
    prepare_parser.add_argument("--data-dir", required=True,
                                help="the raw corpus (train.en, train.de, ...)")
    prepare_parser.add_argument("--output-dir", required=True)
    prepare_parser.add_argument("--merges", type=int, default=10000,
                                help="BPE merges (default: the authors' 10,000)")
    decode_parser = commands.add_parser("decode", help="remove BPE joiners, detokenize")
    decode_parser.add_argument("--language", default="de")
    decode_parser.add_argument("input")
    decode_parser.add_argument("output")
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            prepare(args.data_dir, args.output_dir, args.merges)
        else:
            write_text(args.output, decode(read_text(args.input), args.language))
    except (OSError, ValueError) as error:
        sys.exit(f"paper_text.py: {error}")


if __name__ == "__main__":
    main()
