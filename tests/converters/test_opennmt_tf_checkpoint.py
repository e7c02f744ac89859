"""What the converter reads from an OpenNMT-tf checkpoint's variables alone."""

import numpy as np
import pytest

from kerasnmt.converters.opennmt_tf_checkpoint import (
    OpenNMTCheckpoint,
    check_variables,
    checkpoint_architecture,
    variable_map,
)
from tests.converters.opennmt_tf_fixtures import fixture_values, write_checkpoint


@pytest.mark.parametrize("target_embedding, output_kernel, level", [
    (True, True, "none"), (False, True, "source_target_input"),
    (True, False, "target"), (False, False, "all"),
])
def test_the_sharing_level_is_read_from_the_matrices_the_checkpoint_holds(
        tmp_path, target_embedding, output_kernel, level):
    values = fixture_values("absolute")  # level target: both embeddings, no output kernel
    if not target_embedding:
        del values["model/examples_inputter/labels_inputter/embedding"]
    if output_kernel:
        values["model/decoder/output_layer/kernel"] = np.zeros([16, 201], np.float32)
    path = write_checkpoint(values, str(tmp_path / "ckpt-1"))
    architecture = checkpoint_architecture(OpenNMTCheckpoint(path))
    assert architecture["share_embeddings"] == level
    check_variables(OpenNMTCheckpoint(path), variable_map(architecture))  # each one mapped
