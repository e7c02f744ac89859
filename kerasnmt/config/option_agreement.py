"""The rules between options of a configuration that are each valid alone.

Examples:
    >>> from kerasnmt.config.schema import default_config
    >>> config = default_config()
    >>> config["model"]["num_heads"] = 3
    >>> errors = {}
    >>> check_together(config, errors, given_optimizer_params=None)
    >>> errors["model.num_heads"]
    'model.num_heads: 3 does not divide model.num_units (512)'
"""

from kerasnmt.config.data_section import check_data_files
from kerasnmt.config.params_section import DECODING_OPTION_KEYS, check_optimizer_params
from kerasnmt.config.schema import SCHEMA, value_at
from kerasnmt.decoding.option_rules import decoding_option_problems


def check_together(config, errors, given_optimizer_params):
    """Checks that options agree with each other, for every group of options that are
    valid alone (a mistake is reported once, not again as a disagreement).
    `given_optimizer_params`: the `params.optimizer_params` of the file, if any."""
    data, model, params = config["data"], config["model"], config["params"]
    evaluation = config["eval"]
    found = list(errors)

    def valid(*paths):
        return not any(key == path or key.startswith(f"{path}.") for key in found for path in paths)

    def error(path, message):
        errors.setdefault(path, f"{path}: {message}")

    def more_than(path, other_path):
        value, other = value_at(config, path), value_at(config, other_path)
        if valid(path, other_path) and value > other:
            error(path, f"{value} is more than {other_path} ({other})")

    units, heads = model["num_units"], model["num_heads"]
    if valid("model.num_units", "model.num_heads") and units % heads:
        error("model.num_heads", f"{heads} does not divide model.num_units ({units})")
    # The params section's own rules, then infer.n_best against the same beam.
    for keys in (DECODING_OPTION_KEYS,
                 {"n_best": "infer.n_best", "beam_size": "params.beam_width"}):
        options = {argument: value_at(config, key) for argument, key in keys.items() if valid(key)}
        for argument, message in decoding_option_problems(options, keys).items():
            errors.setdefault(keys[argument], message)  # the message names the key
    more_than("train.average_last_checkpoints", "train.keep_checkpoint_max")
    train = config["train"]
    if (valid("train.batch_size_multiple", "train.batch_type")
            and train["batch_size_multiple"] != 1 and train["batch_type"] == "examples"):
        error("train.batch_size_multiple", "has no effect with train.batch_type examples "
              "(batches hold train.batch_size examples); use batch_type tokens")
    if valid("train.tpu") and train["tpu"] is not None:
        # A TPU compiles one program a batch shape: one shape a bucket, finitely many buckets.
        if valid("train.pad_to_bucket_boundary") and not train["pad_to_bucket_boundary"]:
            error("train.pad_to_bucket_boundary",
                  "must be true with train.tpu (a TPU compiles one program a batch shape)")
        for key in ("maximum_features_length", "maximum_labels_length"):
            if valid(f"train.{key}") and train[key] is None:
                error(f"train.{key}",
                      "must be set with train.tpu (a bounded number of batch shapes)")

    if valid("data"):
        check_data_files(data, error)
        if params["guided_alignment_type"] is not None and data["train_alignments"] is None:
            error(
                "params.guided_alignment_type",
                f"{params['guided_alignment_type']!r} needs data.train_alignments",
            )
        for path in ("eval.export_on_best", "eval.early_stopping.steps"):
            if value_at(config, path) is not None and data["eval_features_file"] is None:
                error(path, "needs data.eval_features_file and data.eval_labels_file")
    for path in ("eval.export_on_best", "eval.early_stopping.metric"):
        metric = value_at(config, path)
        if valid("eval") and metric not in (None, "loss") and metric not in evaluation["scorers"]:
            error(path, f"{metric!r} is not among eval.scorers")
    if valid("params.optimizer", "params.optimizer_params"):
        check_optimizer_params(params, error, given_optimizer_params or {})
    if params["decay_type"] is None:
        for key in ("start_decay_steps", "decay_step_duration", "minimum_learning_rate"):
            if valid(f"params.{key}") and params[key] != SCHEMA["params"][key].default:
                error(f"params.{key}", "has no effect without a params.decay_type")
    decay_type, decay_params = params["decay_type"], params["decay_params"]
    if valid("params.decay_type"):
        if (decay_type == "InvSqrtDecay" and valid("params.decay_params.model_dim")
                and decay_params["model_dim"] is not None):
            error("params.decay_params.model_dim", "has no effect with params.decay_type "
                  "InvSqrtDecay (its params.learning_rate is the peak)")
        if (decay_type != "InvSqrtDecay" and valid("params.decay_params.initial_learning_rate")
                and decay_params["initial_learning_rate"] != 0):
            error("params.decay_params.initial_learning_rate", "has no effect with "
                  f"params.decay_type {decay_type or 'null'} (only InvSqrtDecay has one)")

