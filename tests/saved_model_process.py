"""Runs exported SavedModels in a process where Keras and kerasnmt cannot be imported.

    python tests/saved_model_process.py REQUEST.json RESULT.json

REQUEST.json is a list of `{"saved_model": path, "signature": name, "source": [base64
strings], "sentencepiece": bool}`, run in order; RESULT.json receives `{"outputs": [each
request's outputs of its signature as nested lists (strings base64-encoded)],
"imported_modules": [the names of the modules the process imported]}`. `import keras`,
`import keras_hub`, `import kerasnmt`, `import tf_keras` and `import tensorflow_text` fail
here; before the first request with `"sentencepiece": true`, only the SentencePiece op
library of TensorFlow Text is loaded (`tf.load_op_library`), which is what a serving
process needs for a model that tokenizes with SentencePiece (the requests before it run
without it).
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
    return run_all_without_keras([(saved_model, sentences, sentencepiece)], signature,
                                 directory)[0]


def run_all_without_keras(runs, signature, directory):
    """The outputs of `signature` for each `(saved_model, sentences, sentencepiece)` of
    `runs`, run in order by this script in one new process (request and result in
    `directory`); checks that no blocked module was imported."""
    request, result = os.path.join(directory, "request.json"), os.path.join(directory,
                                                                           "result.json")
    with open(request, "w", encoding="utf-8") as stream:
        json.dump([{"saved_model": str(saved_model), "signature": signature,
                    "source": [base64.b64encode(s.encode("utf-8")).decode() for s in sentences],
                    "sentencepiece": sentencepiece}
                   for saved_model, sentences, sentencepiece in runs], stream)
    command = [sys.executable, os.path.abspath(__file__), request, result]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=directory,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    with open(result, encoding="utf-8") as stream:
        result = json.load(stream)
    assert not [name for name in result["imported_modules"] if name.split(".")[0] in BLOCKED]
    return result["outputs"]


def main(request_path, result_path):
    with open(request_path, encoding="utf-8") as stream:
        requests = json.load(stream)
    library = (sentencepiece_op_library()
               if any(request["sentencepiece"] for request in requests) else None)
    for name in BLOCKED:
        sys.modules[name] = None  # `import name` now raises ImportError
    import tensorflow as tf

    def encode(value):
        if isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        if isinstance(value, list):
            return [encode(item) for item in value]
        return value

    results, sentencepiece_loaded = [], False
    for request in requests:
        if request["sentencepiece"] and not sentencepiece_loaded:
            tf.load_op_library(library)
            sentencepiece_loaded = True
        source = [base64.b64decode(text) for text in request["source"]]
        model = tf.saved_model.load(request["saved_model"])
        outputs = model.signatures[request["signature"]](source=tf.constant(source, tf.string))
        results.append({key: encode(value.numpy().tolist()) for key, value in outputs.items()})
    imported = sorted(name for name, module in sys.modules.items() if module is not None)
    with open(result_path, "w", encoding="utf-8") as stream:
        json.dump({"outputs": results, "imported_modules": imported}, stream)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
