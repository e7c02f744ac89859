"""Whether `kerasnmt translate` compiles a trained model's decoding with XLA.

XLA compiles the decoding once for each source width its batches meet, seconds each, and
then decodes faster than TensorFlow's graph mode; for a small file the compilation costs
more than it saves. Measured from the first batch, 2 cores with AVX-512, 2026-12-05: the
11.7M-parameter reference model of `bench/decode_speed.py` translated the 1,000
sentences of `test_2016_flickr` (beam 4, batches of 32) in 31.7 s compiled and 34.7 s in
graph mode, of which 17.5 s and 11.5 s fixed costs (tracing, compiling), then 14.2 s
against 23.2 s a warm pass: graph mode finishes first below about 670 sentences. The
quickstart model's break-even was about 3,700. So a file of fewer than
`XLA_MINIMUM_SENTENCES` sentences is decoded in graph mode, unless a persistent XLA
cache is on (`KERASNMT_XLA_CACHE`: its programs load instead of compiling) or `--xla`
asks for XLA; `--no-xla` never compiles. Both give the same translations; their scores
may differ in the sixth decimal (XLA fuses the arithmetic differently).

In graph mode, TensorFlow's graph optimizer (Grappler) rewrites each decoding graph the
first time it runs, which for a few hundred sentences costs more than it saves:
`without_graph_optimizer` turns it off around the decoding. A 100-sentence file from
process start, 2 cores, 2026-12-05, two rounds each: 15.2 s with Grappler, 13.9 s without
(the quickstart model); 12.1 against 9.3 s (the converted OpenNMT-tf fixture); 499
sentences with the reference model, 39.4 s against 32.8 s without it and with `gc.freeze`
(as the `kerasnmt` command runs); the same translations. It costs memory: the quickstart model's
100 sentences peaked at 1.38 GiB against 1.16 GiB with Grappler (1.64 GiB with XLA), and
turning every pass off but Grappler's memory optimizer kept 1.22 GiB but gave back 1.2 s
of the 3.
"""

import contextlib

import tensorflow as tf

from kerasnmt import xla_compilation_cache
from kerasnmt.runner.option_error import OptionError

XLA_MINIMUM_SENTENCES = 500


def check_compilation_options(xla, no_xla):
    """Raises an `OptionError` for `--xla` with `--no-xla`, before any input is read."""
    if xla and no_xla:
        raise OptionError("--xla and --no-xla do not go together")


def compiles_decoding(sentence_count, xla=False, no_xla=False, cache_in_use=None):
    """Whether to compile the decoding of `sentence_count` sentences with XLA.

    Args:
        sentence_count: the sentences of the file.
        xla: compile whatever the count (`--xla`).
        no_xla: never compile (`--no-xla`).
        cache_in_use: whether a persistent XLA cache is on; default: whether
            `TF_XLA_FLAGS` names one (`kerasnmt.xla_compilation_cache.in_use`).

    Raises:
        OptionError: `xla` and `no_xla` together.

    Examples:
        >>> compiles_decoding(100, cache_in_use=False), compiles_decoding(5000, cache_in_use=False)
        (False, True)
        >>> compiles_decoding(100, cache_in_use=True), compiles_decoding(100, xla=True)
        (True, True)
        >>> compiles_decoding(5000, no_xla=True)
        False
    """
    check_compilation_options(xla, no_xla)
    if xla or no_xla:
        return bool(xla)
    if cache_in_use is None:
        cache_in_use = xla_compilation_cache.in_use()
    return cache_in_use or sentence_count >= XLA_MINIMUM_SENTENCES


def graph_optimizer_off():
    """Whether TensorFlow's graph optimizer (Grappler) is off: its `disable_meta_optimizer`
    option, False until someone sets it."""
    return tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)


@contextlib.contextmanager
def without_graph_optimizer():
    """Runs the block with TensorFlow's graph optimizer off (`disable_meta_optimizer`), and
    puts the option back as it was after it.

    Examples:
        >>> with without_graph_optimizer():
        ...     graph_optimizer_off()
        True
        >>> graph_optimizer_off()
        False
    """
    before = graph_optimizer_off()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": before})
