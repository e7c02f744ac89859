"""kerasnmt with keras-hub: a keras-hub tokenizer in a kerasnmt Translator, and kerasnmt's
penalized beam search in a keras-hub model.

    .venv/bin/python examples/keras_hub/keras_hub_example.py [--epochs 5]

1. trains a SentencePiece model on the quickstart's English and German sentences, with
   OpenNMT-tf's special tokens at ids 0, 1, 2 (`<blank>`, `<s>`, `</s>`), and wraps it in
   `keras_hub.tokenizers.SentencePieceTokenizer`;
2. trains a tiny kerasnmt `Translator` whose preprocessor tokenizes with it, exports it,
   and translates through the SavedModel (TensorFlow and TensorFlow Text's SentencePiece
   ops only: neither keras-hub nor kerasnmt is needed to serve it);
3. builds a tiny randomly initialized `keras_hub.models.BartSeq2SeqLM` (no download) and
   generates with `kerasnmt.decoding.PenalizedBeamSampler` (length penalty, minimum length,
   n-best list) next to keras-hub's own `BeamSampler`.
"""

import argparse
import io
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import sentencepiece  # noqa: E402
import tensorflow as tf  # noqa: E402

from kerasnmt.evaluation import read_lines  # noqa: E402
from kerasnmt.export import SERVING_SIGNATURE, export_translator  # noqa: E402
from kerasnmt.decoding import BeamSampler  # noqa: E402
from kerasnmt.layers import TranslationPreprocessor  # noqa: E402
from kerasnmt.models import Translator  # noqa: E402
from kerasnmt.decoding import PenalizedBeamSampler  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "quickstart", "data")


def keras_hub_tokenizer(sentences):
    """A joint SentencePiece model of `sentences` with OpenNMT-tf's special tokens, as a
    keras-hub tokenizer that returns pieces (kerasnmt maps them to ids)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, vocab_size=1000,
        pad_id=0, pad_piece="<blank>", bos_id=1, eos_id=2, unk_id=3, minloglevel=2,
    )
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=model.getvalue(), dtype="string")


def translator_with_a_keras_hub_tokenizer(epochs, export_dir):
    sources = read_lines(os.path.join(DATA, "train.en"))[:2000]
    targets = read_lines(os.path.join(DATA, "train.de"))[:2000]
    # Seeded first: tf.random.set_seed clears TensorFlow's kernel cache, which destroys the
    # SentencePiece op resources of tokenizers created before it.
    keras.utils.set_random_seed(1)
    tokenizer = keras_hub_tokenizer(sources + targets)
    # No vocabulary given: the tokenizer's own, which starts with <blank>, <s>, </s>.
    preprocessor = TranslationPreprocessor(tokenizer, tokenizer)
    translator = Translator(preprocessor, num_layers=2, num_units=64, num_heads=4,
                            ffn_inner_dim=128, maximum_relative_position=8,
                            share_embeddings="all")
    translator.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = translator.fit(sources, targets, batch_size=64, epochs=epochs, verbose=0)
    print("training loss by epoch:", np.round(history.history["loss"], 2).tolist())

    sampler = BeamSampler(beam_size=4, length_penalty=0.6, max_length=40)
    export_translator(translator, export_dir, sampler=sampler, jit_compile=False)
    served = tf.saved_model.load(export_dir).signatures[SERVING_SIGNATURE]
    sentences = read_lines(os.path.join(DATA, "test_2016_flickr.en"))[:3]
    outputs = served(source=tf.constant(sentences))
    for source, translation in zip(sentences, outputs["translation"].numpy()):
        print(f"  {source}\n  -> {translation.decode()}")


def bart_with_kerasnmt_search():
    backbone = keras_hub.models.BartBackbone(vocabulary_size=12, num_layers=1, num_heads=2,
                                             hidden_dim=8, intermediate_dim=16,
                                             max_sequence_length=16)
    rng = np.random.default_rng(0)
    for weight in backbone.weights:  # random, and peaked enough to make choices matter
        if "gamma" not in weight.path and "beta" not in weight.path:
            weight.assign(rng.normal(0, 0.1 if "feedforward" in weight.path else 1.5,
                                     weight.shape))
    bart = keras_hub.models.BartSeq2SeqLM(backbone=backbone, preprocessor=None)
    start, end, pad = 0, 2, 1  # BART's <s>, </s>, <pad>
    inputs = {
        "encoder_token_ids": tf.constant([[start, 5, 7, 9, end]]),
        "encoder_padding_mask": tf.ones([1, 5], tf.bool),
        "decoder_token_ids": tf.constant([[end, start] + [pad] * 8]),
        "decoder_padding_mask": tf.constant([[True, True] + [False] * 8]),
    }
    for name, sampler in [
        ("keras-hub BeamSampler(num_beams=4)", keras_hub.samplers.BeamSampler(num_beams=4)),
        ("PenalizedBeamSampler(num_beams=4)", PenalizedBeamSampler(num_beams=4)),
        ("PenalizedBeamSampler(num_beams=4, length_penalty=1.0, min_length=3)",
         PenalizedBeamSampler(num_beams=4, length_penalty=1.0, min_length=3)),
    ]:
        bart.compile(sampler=sampler)
        outputs = bart.generate(inputs, stop_token_ids=(end,))
        ids = outputs["decoder_token_ids"][0][outputs["decoder_padding_mask"][0]]
        print(f"  {name}: {ids.tolist()}")

    # An n-best list: the sampler called as keras-hub's samplers are, with the model's
    # `call_with_cache`-style `next`; here a bigram table stands in for the model.
    table = np.log(rng.dirichlet(np.ones(6) * 0.5, size=6)).astype("float32")

    def next(prompt, cache, index):
        return tf.gather(table, prompt[:, index - 1]), None, cache

    prompts, scores = PenalizedBeamSampler(num_beams=4, n_best=3, length_penalty=0.6)(
        next, prompt=tf.constant([[1, 0, 0, 0, 0, 0]]), index=1, stop_token_ids=(2,))
    for prompt, score in zip(prompts[0].numpy().tolist(), scores[0].numpy()):
        print(f"  n-best: {prompt} score {score:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    print("1-2. A Translator with keras-hub's SentencePiece tokenizer, served as a SavedModel:")
    with tempfile.TemporaryDirectory() as directory:
        translator_with_a_keras_hub_tokenizer(args.epochs, os.path.join(directory, "1"))
    print("3. kerasnmt's search in a keras-hub BART (random weights):")
    bart_with_kerasnmt_search()


if __name__ == "__main__":
    main()
