"""The rules that tie decoding options to each other, written once.

`BeamSampler`, the configuration's `params` and `infer` sections and the command line's
`--n-best` all report what breaks them, each under its own names for the options.

Examples:
    >>> decoding_option_problems({"beam_size": 2, "n_best": 3})
    {'n_best': 'n_best: 3 is more than beam_size (2)'}
    >>> decoding_option_problems({"n_best": 3, "beam_size": 2},
    ...                          {"n_best": "--n-best", "beam_size": "params.beam_width"})
    {'n_best': '--n-best: 3 is more than params.beam_width (2)'}
"""


def decoding_option_problems(options, names=None):
    """The rules `options` break, as `{argument: message}`.

    Args:
        options: `BeamSampler` arguments and their values; any of `beam_size`, `n_best`,
            `min_length`, `max_length`, `top_k`, `early_exit` and `finished_hypotheses`
            (a rule whose options are not all given is not checked).
        names: how the caller names each argument in its messages (a configuration key,
            a command-line option); default the argument's own name.

    Returns:
        A dict, empty when every rule holds.
    """
    names = names or {}

    def name(argument):
        return names.get(argument, argument)

    problems = {}
    for argument, bound in (("n_best", "beam_size"), ("min_length", "max_length")):
        if argument in options and bound in options and options[argument] > options[bound]:
            problems[argument] = (f"{name(argument)}: {options[argument]} is more than "
                                  f"{name(bound)} ({options[bound]})")
    if options.get("finished_hypotheses") == "set_aside":
        # The set-aside search ends by its own rule and keeps no sampled candidates.
        for argument, needed in (("early_exit", False), ("top_k", 1)):
            if argument in options and options[argument] != needed:
                problems[argument] = (
                    f"{name(argument)}: must be {needed} with "
                    f"{name('finished_hypotheses')}: set_aside (a deterministic search "
                    f"with its own end), got {options[argument]}")
    return problems
