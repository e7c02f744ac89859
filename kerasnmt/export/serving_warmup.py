"""The warm-up file of an export: a request of every shape its decoding is compiled for.

XLA compiles the SavedModel's decoding once per (rows, source width) pair
(`kerasnmt.export`), when the first request of that shape comes: seconds each.
`export_translator` writes `assets.extra/tf_serving_warmup_requests` into the export, a
TFRecord file of `PredictionLog` records that TF Serving runs when it loads a version
(`--enable_model_warmup`, on by default), before the version serves:

- through `serving_default`, one request for each source width W and batch bucket B: B
  sentences that the model's own tokenization turns into the shortest length of W's bucket
  (a word of the source vocabulary repeated), so the request decodes at exactly (B, W);
- through `n_best`, one request of one sentence: both signatures call the same compiled
  decodings (an `n_best` request after `serving_default` ones compiles nothing), but the
  first call of a signature costs a second or two of its own.

TF Serving fails to load a version whose file holds more than 1,000 records. `warm_up`
runs the same requests through a model loaded by `tf.saved_model.load`.
"""

import concurrent.futures
import os

import tensorflow as tf
from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

from kerasnmt.data.vocabulary import SPECIAL_TOKENS
from kerasnmt.decoding.source import source_features

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
MAXIMUM_WARMUP_REQUESTS = 1000  # TF Serving's WarmupConsts::kMaxNumRecords


def warmup_requests(preprocessor, maximum_source_length, width_buckets, batch_size_buckets,
                    signatures):
    """`(signature, sentences)` pairs: one of every (batch bucket, source width) shape through
    the first of `signatures`, and one of one sentence through each of the others (the
    signatures of an export share its compiled decodings).

    Args:
        preprocessor: the model's `TranslationPreprocessor`.
        maximum_source_length: sources are cut to this many tokens.
        width_buckets: the export's source widths, the last `maximum_source_length`.
        batch_size_buckets: the export's batch sizes.
        signatures: the signature names, the one to warm at every shape first.

    Raises:
        ValueError: when no token of the source vocabulary, repeated, tokenizes into the
            shortest length of each width, or when there would be more than 1,000 requests.

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> for signature, sentences in warmup_requests(
        ...         preprocessor, 12, [8, 12], [1, 2], ["serving_default", "n_best"]):
        ...     print(signature, sentences)
        serving_default ['a']
        serving_default ['a', 'a']
        serving_default ['a a a a a a a a a']
        serving_default ['a a a a a a a a a', 'a a a a a a a a a']
        n_best ['a']
    """
    count = len(width_buckets) * len(batch_size_buckets) + len(signatures) - 1
    if count > MAXIMUM_WARMUP_REQUESTS:
        raise ValueError(
            f"{len(width_buckets)} source widths x {len(batch_size_buckets)} batch sizes make "
            f"{count} warm-up requests, more than TF Serving loads "
            f"({MAXIMUM_WARMUP_REQUESTS}): export with fewer buckets, or without warm-up "
            "(warmup=False, kerasnmt export --no-warmup)"
        )
    sentences = _sentences(preprocessor, maximum_source_length, width_buckets)
    first, *others = signatures
    return [(first, [sentence] * rows) for sentence in sentences
            for rows in batch_size_buckets] + [(name, sentences[:1]) for name in others]


def _sentences(preprocessor, maximum_source_length, width_buckets):
    """For each width, a sentence of the shortest length it holds (one more token than the
    width before it): the first word of the source vocabulary that the source tokenization
    turns into exactly that many tokens when repeated (the shortest decoding of each
    shape)."""
    lengths = [previous + 1 for previous in [0] + list(width_buckets[:-1])]
    words = preprocessor.source_vocabulary[len(SPECIAL_TOKENS):]
    single = source_features(preprocessor, tf.constant(words, tf.string),
                             maximum_source_length)["length"].numpy() == 1
    for word in (word for word, one in zip(words, single) if one):
        sentences = [" ".join([word] * length) for length in lengths]
        found = source_features(preprocessor, tf.constant(sentences), maximum_source_length)
        if found["length"].numpy().tolist() == lengths:
            return sentences
    raise ValueError(
        f"no warm-up sentences: no token of the source vocabulary, repeated, tokenizes into "
        f"sources of {lengths} tokens (the shortest of each source width {list(width_buckets)}): "
        "export without warm-up (warmup=False, kerasnmt export --no-warmup)"
    )


def write_warmup_file(directory, requests):
    """Writes `requests` (`(signature, sentences)` pairs) as the `PredictionLog` records of
    `directory/assets.extra/tf_serving_warmup_requests`.

    Examples:
        >>> import tempfile
        >>> directory = tempfile.mkdtemp()
        >>> write_warmup_file(directory, [("serving_default", ["a b", "c"])])
        >>> record = next(iter(tf.data.TFRecordDataset(os.path.join(directory, WARMUP_FILE))))
        >>> request = prediction_log_pb2.PredictionLog.FromString(
        ...     record.numpy()).predict_log.request
        >>> request.model_spec.signature_name, tf.make_ndarray(request.inputs["source"])
        ('serving_default', array([b'a b', b'c'], dtype=object))
    """
    path = os.path.join(directory, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for signature, sentences in requests:
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(signature_name=signature),
                inputs={"source": tf.make_tensor_proto(sentences, tf.string)},
            )
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())


def warm_up(model, directory, num_threads=1):
    """Runs the warm-up requests of the export at `directory` through `model`, what
    `tf.saved_model.load(directory)` returned, as TF Serving does when it loads it: every
    shape of the decoding is compiled before the first translation.

    Args:
        model: the loaded SavedModel.
        directory: the SavedModel directory it was loaded from (a loaded model does not
            know it).
        num_threads: requests run at once (TF Serving's `num_model_warmup_threads`): each
            shape is a program of its own, and XLA compiles different programs at the
            same time (the quickstart model's 41 requests on 2 cores: 128 s with 2
            threads against 169 s with 1, a peak memory 4% higher, 2026-12-04).

    Returns:
        The number of requests run (0 for an export written without warm-up).

    Examples:
        >>> import tempfile
        >>> from kerasnmt import Translator, layers
        >>> translator = Translator(
        ...     layers.TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
        ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
        >>> path = translator.export(os.path.join(tempfile.mkdtemp(), "1"),
        ...                          maximum_source_length=8, batch_size_buckets=[1, 2],
        ...                          jit_compile=False)
        >>> warm_up(tf.saved_model.load(path), path)  # (1, 8), (2, 8), then n_best
        3
    """
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"warm_up: num_threads must be a positive int, got {num_threads!r}")
    path = os.path.join(directory, WARMUP_FILE)
    if not tf.io.gfile.exists(path):
        return 0
    requests = [prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
                for record in tf.data.TFRecordDataset(path)]

    def run(request):
        model.signatures[request.model_spec.signature_name](**{
            name: tf.constant(tf.make_ndarray(tensor)) for name, tensor in request.inputs.items()
        })

    with concurrent.futures.ThreadPoolExecutor(num_threads) as pool:
        # list() waits for every request, and raises the first request's error.
        list(pool.map(run, requests))
    return len(requests)
