"""Tiny SentencePiece models trained in memory for the tests (no download)."""

import functools
import io

import sentencepiece

# The features side of the reference note's corpus (opennmt-tf-training-data.md), untokenized.
ENGLISH = ["a", "21", "yes", "no", "cat", "he can", "door open", "I like it", "bat in bad",
           "good day today"]


@functools.lru_cache(maxsize=None)
def train(model_type="word", vocab_size=21, sentences=tuple(ENGLISH * 5), **options):
    """Serialized model trained on `sentences`; a "word" model's pieces are "▁" + each word.
    `options` go to the trainer (e.g. `pad_id`)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=model,
        model_type=model_type,
        vocab_size=vocab_size,
        character_coverage=1.0,
        minloglevel=2,
        **options,
    )
    return model.getvalue()
