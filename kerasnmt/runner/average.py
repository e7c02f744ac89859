"""`kerasnmt average-checkpoints`: the last checkpoints of a run averaged into one."""

import os

from kerasnmt.runner.run_checkpoints import average_run_checkpoints
from kerasnmt.runner.run_config import run_configuration
from kerasnmt.runner.run_model import MODEL_KEYS


def average_checkpoints(config, max_count=None, output=None):
    """Average the weights of the last checkpoints of a training run.

    Reads the configuration (for the model's shape), averages every trainable weight
    over the last --max-count readable checkpoints of model_dir (newest first, as
    OpenNMT-tf's average_checkpoints; a damaged one is reported and skipped) and writes
    the result as one checkpoint in --output (default: MODEL_DIR/avg), numbered with the
    newest averaged step. `kerasnmt export` and `kerasnmt translate` take it by default
    when it is the newest. An --output that is a file is refused before anything is read.

    Args:
        config: the run configuration (a path, or a configuration `load_config` returned)
        max_count: checkpoints to average (default: train.average_last_checkpoints, or 1
            when 0)
        output: where to write (default: MODEL_DIR/avg)

    Returns:
        The path of the averaged checkpoint, numbered with the newest averaged step.

    Raises:
        ValueError: `output` is a file (refused before anything is read), or no readable
            checkpoint.

    Examples:
        >>> import os, tempfile
        >>> output = os.path.join(tempfile.mkdtemp(), "average.txt")
        >>> open(output, "w").close()
        >>> average_checkpoints("run.yml", output=output)
        Traceback (most recent call last):
        ...
        ValueError: --output /.../average.txt is a file: average-checkpoints writes a checkpoint directory
    """
    if output and os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f"--output {output} is a file: average-checkpoints writes "
                         "a checkpoint directory")
    config = run_configuration(config, required=("model_dir",) + MODEL_KEYS)
    return average_run_checkpoints(config, max_count=max_count, output_dir=output)
