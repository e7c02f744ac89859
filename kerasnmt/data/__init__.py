"""Vocabularies, SentencePiece training and tf.data pipelines."""

from kerasnmt.data.inference_pipeline import in_original_order, inference_dataset
from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.data.sentencepiece_trainer import sample_lines_with_byte_budget, train_sentencepiece
from kerasnmt.data.shards import ShardsError, load_shards_index, read_shards, write_shards
from kerasnmt.data.text_files import CorpusError, count_lines, read_lines
from kerasnmt.data.training_pipeline import make_training_batches, training_dataset
from kerasnmt.data.vocabulary_builder import build_vocabulary

__all__ = [
    "CorpusError",
    "LexicalShortlist",
    "ShardsError",
    "build_vocabulary",
    "count_lines",
    "in_original_order",
    "inference_dataset",
    "load_shards_index",
    "make_training_batches",
    "read_lines",
    "read_shards",
    "sample_lines_with_byte_budget",
    "train_sentencepiece",
    "training_dataset",
    "write_shards",
]
