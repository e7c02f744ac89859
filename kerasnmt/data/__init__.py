"""Vocabularies, SentencePiece training and tf.data pipelines."""
