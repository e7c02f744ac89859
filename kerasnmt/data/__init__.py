"""Vocabularies, SentencePiece training and tf.data pipelines."""

from kerasnmt.data.sentencepiece_trainer import sample_lines_with_byte_budget, train_sentencepiece
from kerasnmt.data.text_files import CorpusError, count_lines, read_lines
from kerasnmt.data.training_pipeline import make_training_batches
from kerasnmt.data.vocabulary_builder import build_vocabulary

__all__ = [
    "CorpusError",
    "build_vocabulary",
    "count_lines",
    "make_training_batches",
    "read_lines",
    "sample_lines_with_byte_budget",
    "train_sentencepiece",
]
