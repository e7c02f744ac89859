"""`float32_translator`: a model trained in mixed precision decodes in float32."""

import numpy as np
import pytest

from kerasnmt.export import quantize_dense_layers
from kerasnmt.decoding import float32_translator
from kerasnmt.decoding import BeamSampler
from tests.models.translator_fixtures import tiny_translator

SENTENCES = ["a b c", "d e", "h g f e d c b a", "b"]


def _scores(translator):
    details = translator.translate(SENTENCES, sampler=BeamSampler(beam_size=2, max_length=8),
                                   return_details=True, jit_compile=False)
    return [[hypothesis["score"] for hypothesis in n_best] for n_best in details]


def test_a_mixed_precision_model_decodes_as_its_float32_twin():
    """The same seed draws the same float32 variables under either policy, so the float32
    copy of the `mixed_bfloat16` model must decode exactly as the model built in float32
    from the start, and not as the bfloat16 model does."""
    mixed = tiny_translator(seed=5, dtype="mixed_bfloat16")
    twin = tiny_translator(seed=5)
    copy = float32_translator(mixed)
    assert copy is not mixed and copy.preprocessor is mixed.preprocessor
    assert {layer.compute_dtype for layer in copy._flatten_layers()} == {"float32"}
    assert all(np.array_equal(a, b) for a, b in zip(copy.get_weights(), twin.get_weights()))
    np.testing.assert_allclose(_scores(copy), _scores(twin), atol=1e-5)
    assert not np.allclose(_scores(mixed), _scores(twin), atol=1e-4)


def test_a_float32_model_is_returned_as_it_is():
    translator = tiny_translator()
    assert float32_translator(translator) is translator


def test_a_model_quantized_in_mixed_precision_is_refused():
    mixed = tiny_translator(dtype="mixed_bfloat16")
    quantize_dense_layers(mixed)
    with pytest.raises(ValueError, match=r"mixed_bfloat16 and layers \[.*\] are quantized: "
                                         r"quantize a float32 copy instead"):
        float32_translator(mixed)
