"""Get or build a vocabulary: reuse one built from the same inputs and options.

Tensor2Tensor's `get_or_generate_vocab` reuses a vocabulary file that exists under the
expected name. kerasnmt reuses one only when a record written beside it when it was built,
`OUTPUT.build.json` (`record_path`), shows that the inputs, the options and the output
files themselves are still the same: their SHA-256 digests are compared, never their dates
or names, so a changed corpus is always rebuilt from, and a touched or renamed one reused.
"""

import hashlib
import json
import os

from kerasnmt.data.result_file import result_file

RECORD_FORMAT = "kerasnmt-vocabulary-build-1"


def record_path(output):
    """`OUTPUT.build.json`, the record of how `output` (a vocabulary file, or the prefix of
    `OUTPUT.model` and `OUTPUT.vocab`) was built."""
    return f"{output}.build.json"


def file_digest(path):
    """The SHA-256 of a file's bytes, in hex, read in blocks (a `.gz` file as stored)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_inputs(files):
    """The recorded identity of the input files, in order: path and SHA-256."""
    return [{"path": os.fspath(path), "sha256": file_digest(path)} for path in files]


def stale_reason(output, inputs, options, outputs):
    """Why the vocabulary at `output` must be built, or None when it can be reused.

    Args:
        output: what `record_path` takes.
        inputs: `describe_inputs` of the input files, now.
        options: the build options, a JSON-compatible dict.
        outputs: the files the build writes.

    Returns:
        None when the record exists, holds these inputs (same contents in the same order)
        and options, and every output still has the digest recorded; else a phrase saying
        what differs.

    Examples:
        >>> import tempfile
        >>> directory = tempfile.mkdtemp()
        >>> corpus, vocabulary = os.path.join(directory, "train"), os.path.join(directory, "v")
        >>> for path, text in ((corpus, "a b a\\n"), (vocabulary, "<blank>\\n<s>\\n</s>\\na\\n")):
        ...     with open(path, "w") as file:
        ...         _ = file.write(text)
        >>> stale_reason(vocabulary, describe_inputs([corpus]), {"size": 4}, [vocabulary])
        'no record of how it was built'
        >>> write_record(vocabulary, describe_inputs([corpus]), {"size": 4}, [vocabulary])
        >>> stale_reason(vocabulary, describe_inputs([corpus]), {"size": 4}, [vocabulary])
        >>> stale_reason(vocabulary, describe_inputs([corpus]), {"size": 5}, [vocabulary])
        'option size was 4, now 5'
        >>> with open(corpus, "a") as file:
        ...     _ = file.write("c\\n")
        >>> stale_reason(vocabulary, describe_inputs([corpus]), {"size": 4}, [vocabulary])[-29:]
        'train changed since the build'
    """
    missing = [path for path in outputs if not os.path.exists(path)]
    if missing:
        return f"{os.fspath(missing[0])} does not exist"
    path = record_path(output)
    try:
        with open(path, encoding="utf-8") as file:
            record = json.load(file)
    except FileNotFoundError:
        return "no record of how it was built"
    except (OSError, ValueError) as error:
        return f"its record {path} cannot be read ({error})"
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        return f"its record {path} is not of format {RECORD_FORMAT}"
    recorded_inputs = record.get("inputs", [])
    if [entry.get("sha256") for entry in recorded_inputs] != [entry["sha256"] for entry in inputs]:
        if len(recorded_inputs) != len(inputs):
            return f"it was built from {len(recorded_inputs)} files, now {len(inputs)}"
        for before, now in zip(recorded_inputs, inputs):
            if before.get("sha256") != now["sha256"]:
                return f"input {now['path']} changed since the build"
    recorded_options = record.get("options", {})
    for key in sorted(set(recorded_options) | set(options)):
        if recorded_options.get(key) != options.get(key):
            return f"option {key} was {recorded_options.get(key)}, now {options.get(key)}"
    recorded_outputs = record.get("outputs", {})
    for output_path in outputs:
        if recorded_outputs.get(os.path.basename(output_path)) != file_digest(output_path):
            return f"{os.fspath(output_path)} changed since the build"
    return None


def write_record(output, inputs, options, outputs):
    """Writes `record_path(output)`: the inputs, the options and the digests of the
    `outputs` just built (replacing the file only once complete)."""
    record = {
        "format": RECORD_FORMAT,
        "inputs": inputs,
        "options": options,
        "outputs": {os.path.basename(path): file_digest(path) for path in outputs},
    }
    with result_file(record_path(output)) as file:
        json.dump(record, file, indent=1, sort_keys=True)
        file.write("\n")


def get_or_build(files, output, options, outputs, build, force=False):
    """Tensor2Tensor's get-or-generate: says so in one line and returns when `outputs` were
    built from the same `files` and `options` (see `stale_reason`), else calls `build()`
    (saying why when a record disagrees), records how, and says what it wrote.

    Args:
        files: the input files.
        output: the vocabulary file, or the prefix of a SentencePiece model's files.
        options: the options of the build, as recorded.
        outputs: the files `build` writes.
        build: writes `outputs` and returns the vocabulary (for its size).
        force: build even when the record matches.
    """
    inputs = describe_inputs(files)
    reason = None if force else stale_reason(output, inputs, options, outputs)
    names = " and ".join(outputs)
    if reason is None and not force:
        print(f"{names} up to date: built from the same files and options "
              f"({record_path(output)}); --force builds again")
        return
    if reason is not None and os.path.exists(record_path(output)):
        print(f"building {names} again: {reason}")
    vocabulary = build()
    write_record(output, inputs, options, outputs)
    print(f"wrote {names} ({len(vocabulary)} entries)")
