"""The reference model of the benchmarks: its command-line options, vocabulary and Translator.

Issue 4's reference configuration: 3+3 layers, 256 units, 4 heads, FFN 1024,
`maximum_relative_position` 20, and a joint 8k SentencePiece vocabulary trained once on
the Multi30k training files (kept in `--workdir`). Shared by `bench/train_speed.py` and
`bench/decode_speed.py`, so that both measure the same model.
"""

import os
import time

from kerasnmt.data import train_sentencepiece
from kerasnmt.data.vocabulary import load_vocabulary
from kerasnmt.layers import SentencePieceTokenizer, TranslationPreprocessor
from kerasnmt.models import Translator

# The Multi30k files, where scripts/download_multi30k.sh writes them.
DEFAULT_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                            "multi30k")


def add_model_arguments(parser):
    """Adds the data, vocabulary and model-size options to an `argparse` parser."""
    parser.add_argument("--data-dir", default=DEFAULT_DATA)
    parser.add_argument("--source", default="train.en")
    parser.add_argument("--target", default="train.de")
    parser.add_argument("--workdir", default="/tmp/kerasnmt_train_speed",
                        help="where the SentencePiece model is trained once and kept")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--num-layers", type=int, default=3)
    parser.add_argument("--num-units", type=int, default=256)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--ffn-inner-dim", type=int, default=1024)
    parser.add_argument("--maximum-relative-position", type=int, default=20)


def sentencepiece_files(arguments):
    """The joint SentencePiece model and vocabulary files, trained on first use."""
    prefix = os.path.join(arguments.workdir, f"joint{arguments.vocab_size}")
    if not os.path.exists(prefix + ".model"):
        os.makedirs(arguments.workdir, exist_ok=True)
        started = time.time()
        train_sentencepiece(
            [os.path.join(arguments.data_dir, name) for name in (arguments.source, arguments.target)],
            prefix,
            arguments.vocab_size,
            file_byte_budget=None,
        )
        print(f"trained the SentencePiece model in {time.time() - started:.1f} s: {prefix}.model")
    return prefix + ".model", prefix + ".vocab"


def reference_translator(arguments, dtype=None):
    """A new (untrained) reference `Translator` with the joint SentencePiece preprocessor."""
    model_path, vocabulary_path = sentencepiece_files(arguments)
    vocabulary = load_vocabulary(vocabulary_path)
    tokenizer = SentencePieceTokenizer(model_path)
    preprocessor = TranslationPreprocessor(tokenizer, tokenizer, vocabulary, vocabulary)
    return Translator(
        preprocessor,
        num_layers=arguments.num_layers,
        num_units=arguments.num_units,
        num_heads=arguments.num_heads,
        ffn_inner_dim=arguments.ffn_inner_dim,
        maximum_relative_position=arguments.maximum_relative_position,
        dtype=dtype,
    )
