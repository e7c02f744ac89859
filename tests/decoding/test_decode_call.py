"""`decode_function`'s weights compiled in as constants (what an export uses)."""

import re

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.export import quantize_dense_layers
from kerasnmt.decoding import decode_call
from kerasnmt.decoding.decode_call import decode_function, fits_in_constants
from kerasnmt.decoding import BeamSampler
from tests.models.translator_fixtures import forbid_outside, tiny_translator

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(28)

IDS = tf.constant([[3, 4, 5, 6], [7, 3, 0, 0]])
LENGTH = tf.constant([4, 2])
SAMPLER = BeamSampler(beam_size=2, max_length=6)


def built_translator():
    translator = tiny_translator()
    decode_function(translator, SAMPLER, jit_compile=False, alignment=False)(IDS, LENGTH, None)
    return translator


def entry_parameters(decode):
    """The number of parameters of the XLA program's entry computation."""
    hlo = decode.experimental_get_compiler_ir(IDS, LENGTH, None)(stage="hlo")
    entry = hlo[hlo.index("\nENTRY "):]
    entry = entry[: entry.index("\n}")]
    return len(re.findall(r"= \S+ parameter\(\d+\)", entry))


@pytest.mark.parametrize("int8", [False, True], ids=["float32", "int8 Dense layers"])
def test_constant_weights_are_compiled_in_and_decode_as_the_variables_do(int8):
    translator = built_translator()
    if int8:
        quantize_dense_layers(translator)
    constant = decode_function(translator, SAMPLER, alignment=False, constant_weights=True)
    variable = decode_function(translator, SAMPLER, alignment=False)
    # The ids and lengths are the programs' inputs, plus one per variable read.
    assert entry_parameters(constant) == 2
    assert entry_parameters(variable) > 2 + len(translator.variables) // 2
    outputs, expected = constant(IDS, LENGTH, None), variable(IDS, LENGTH, None)
    np.testing.assert_array_equal(outputs["ids"].numpy(), expected["ids"].numpy())
    np.testing.assert_allclose(outputs["scores"].numpy(), expected["scores"].numpy(),
                               rtol=1e-5)


def test_constant_weights_are_the_values_when_the_function_is_made():
    translator = built_translator()
    constant = decode_function(translator, SAMPLER, alignment=False, constant_weights=True)
    before = constant(IDS, LENGTH, None)
    assert (before["lengths"].numpy() > 0).all()
    forbid_outside(translator, allowed=[2])  # only </s> left: every translation empty
    variable = decode_function(translator, SAMPLER, alignment=False)
    np.testing.assert_array_equal(variable(IDS, LENGTH, None)["lengths"].numpy(), 0)
    after = constant(IDS, LENGTH, None)
    np.testing.assert_array_equal(after["ids"].numpy(), before["ids"].numpy())
    np.testing.assert_array_equal(after["lengths"].numpy(), before["lengths"].numpy())


def test_weights_above_the_budget_or_without_xla_stay_variables(monkeypatch):
    translator = built_translator()
    size = sum(int(np.prod(v.shape)) * 4 for v in translator.variables)  # all float32
    monkeypatch.setattr(decode_call, "CONSTANT_WEIGHTS_MAX_BYTES", size)
    assert fits_in_constants(translator, jit_compile=True)
    assert not fits_in_constants(translator, jit_compile=False)
    monkeypatch.setattr(decode_call, "CONSTANT_WEIGHTS_MAX_BYTES", size - 1)
    assert not fits_in_constants(translator, jit_compile=True)
    decode = decode_function(translator, SAMPLER, alignment=False, constant_weights=True)
    assert entry_parameters(decode) > 2
