"""Batches of sentences translated by a `Translator` with a run's decoding options."""

import contextlib

from kerasnmt.runner.decoding_compilation import without_graph_optimizer
from kerasnmt.runner.decoding_model import decoding_sampler
from kerasnmt.runner.run_model import decoding_options


class CheckpointTranslator:
    """Translates batches with `Translator.translate` and the options of a configuration.

    Args:
        translator: the `Translator`.
        config: the run configuration, or None (a width-4 beam, no source cut).
        n_best: hypotheses returned a sentence.
        batch_size: sentences decoded together.
        early_exit: stop a beam once every sentence's n-best finished.
        jit_compile: compile the decoding with XLA; without it, the decoding runs in graph
            mode with Grappler off (`kerasnmt.runner.decoding_compilation`).
        shortlist: a `LexicalShortlist`, or None.

    Call arguments:
        sentences: a list of raw source sentences.

    Returns:
        A list of n-best lists of hypotheses (`text`, `score`, `alignment`), one a
        sentence.

    Examples:
        >>> import inspect
        >>> list(inspect.signature(CheckpointTranslator).parameters)[:3]
        ['translator', 'config', 'n_best']
    """

    def __init__(self, translator, config, n_best, batch_size, early_exit, jit_compile,
                 shortlist):
        self.translator = translator
        self.sampler = decoding_sampler(config, max(n_best, config["params"]["num_hypotheses"])
                                        if config else n_best, early_exit)
        self.n_best = n_best
        self.batch_size = batch_size
        self.replace_unknown_target = bool(config and config["params"]["replace_unknown_target"])
        self.shortlist = shortlist
        self.jit_compile = jit_compile
        # Sources cut as the export of this configuration cuts them.
        self.options = decoding_options(config) if config else {}

    def __call__(self, sentences):
        with (contextlib.nullcontext() if self.jit_compile else without_graph_optimizer()):
            results = self.translator.translate(
                sentences, sampler=self.sampler, batch_size=self.batch_size,
                return_details=True, replace_unknown_target=self.replace_unknown_target,
                shortlist=self.shortlist, jit_compile=self.jit_compile, **self.options,
            )
        return [n_best[: self.n_best] for n_best in results]
