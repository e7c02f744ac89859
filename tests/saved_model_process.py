"""Runs an exported SavedModel in a process where Keras and kerasnmt cannot be imported.

    python tests/saved_model_process.py SAVED_MODEL REQUEST.json RESULT.json [--sentencepiece]

REQUEST.json is `{"signature": name, "source": [base64 strings]}`; RESULT.json receives
every output of the signature as nested lists (strings base64-encoded) and the names of
the modules the process imported. `import keras`, `import keras_hub`, `import kerasnmt`,
`import tf_keras` and `import tensorflow_text` fail here; with `--sentencepiece`, only the SentencePiece
op library of TensorFlow Text is loaded (`tf.load_op_library`), which is what a serving
process needs for a model that tokenizes with SentencePiece.
"""

import base64
import importlib.util
import json
import os
import subprocess
import sys

BLOCKED = ("keras", "keras_hub", "kerasnmt", "tf_keras", "tensorflow_text")


def sentencepiece_op_library():
    """The path of TensorFlow Text's SentencePiece op library (found without importing
    tensorflow_text, which imports Keras)."""
    spec = importlib.util.find_spec("tensorflow_text")
    return os.path.join(
        spec.submodule_search_locations[0], "python", "ops", "_sentencepiece_tokenizer.so"
    )


def run_without_keras(saved_model, sentences, signature, directory, sentencepiece=False):
    """The outputs of `signature` for `sentences`, run by this script in a new process
    (request and result in `directory`); checks that no blocked module was imported."""
    request, result = os.path.join(directory, "request.json"), os.path.join(directory,
                                                                           "result.json")
    with open(request, "w", encoding="utf-8") as stream:
        json.dump({"signature": signature,
                   "source": [base64.b64encode(s.encode("utf-8")).decode() for s in sentences]},
                  stream)
    command = [sys.executable, os.path.abspath(__file__), str(saved_model), request, result]
    if sentencepiece:
        command.append("--sentencepiece")
    completed = subprocess.run(command, capture_output=True, text=True, cwd=directory,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    with open(result, encoding="utf-8") as stream:
        outputs = json.load(stream)
    imported = outputs.pop("imported_modules")
    assert not [name for name in imported if name.split(".")[0] in BLOCKED]
    return outputs


def main(saved_model, request_path, result_path, sentencepiece):
    library = sentencepiece_op_library() if sentencepiece else None
    for name in BLOCKED:
        sys.modules[name] = None  # `import name` now raises ImportError
    import tensorflow as tf

    if library is not None:
        tf.load_op_library(library)
    with open(request_path, encoding="utf-8") as stream:
        request = json.load(stream)
    source = [base64.b64decode(text) for text in request["source"]]
    model = tf.saved_model.load(saved_model)
    outputs = model.signatures[request["signature"]](source=tf.constant(source, tf.string))

    def encode(value):
        if isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        if isinstance(value, list):
            return [encode(item) for item in value]
        return value

    result = {key: encode(value.numpy().tolist()) for key, value in outputs.items()}
    result["imported_modules"] = sorted(
        name for name, module in sys.modules.items() if module is not None
    )
    with open(result_path, "w", encoding="utf-8") as stream:
        json.dump(result, stream)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], "--sentencepiece" in sys.argv[4:])
