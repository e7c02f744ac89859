"""The `data` section of the run configuration: vocabularies, tokenizers and corpora.

Examples:
    >>> DATA_SECTION["train_features_file"].kind.describe()
    'a path to an existing file, or a list of them, or null'
"""

from kerasnmt.config.option_types import Number, NumberList, Option, Path, PathList


DATA_SECTION = {
    "source_vocabulary": Option(
        None,
        Path(),
        "Source vocabulary: one token a line, starting with `<blank>`, `<s>`, `</s>` "
        "(OpenNMT-tf format). Tokens not in it map to one unknown id.",
    ),
    "target_vocabulary": Option(
        None, Path(), "Target vocabulary, in the same format as `source_vocabulary`."
    ),
    "source_sentencepiece": Option(
        None,
        Path(),
        "SentencePiece model (`.model`) that splits the source text into pieces. "
        "When null, the source is split on whitespace.",
    ),
    "target_sentencepiece": Option(
        None,
        Path(),
        "SentencePiece model for the target text (it also detokenizes the translations). "
        "When null, the target is split on whitespace and joined with spaces.",
    ),
    "sentencepiece_sampling_alpha": Option(
        None,
        Number(0, 1, closed=(False, False), nullable=True),
        "In training only, sample a SentencePiece segmentation of each training "
        "sentence at each pass instead of the best one: BPE-dropout with this drop "
        "probability for BPE models, subword regularization with this smoothing for "
        "unigram models (as SentencePiece's `enable_sampling`, `nbest_size: -1`); "
        "e.g. 0.1. Validation, translation and exports segment deterministically. "
        "Needs a SentencePiece model; not with shards or alignments, which hold one "
        "segmentation.",
    ),
    "train_features_file": Option(
        None,
        PathList(),
        "Training source text, one sentence a line; a list of files for several corpora.",
    ),
    "train_labels_file": Option(
        None,
        PathList(),
        "Training target text, line-aligned with `train_features_file` (same number of files).",
    ),
    "train_shards": Option(
        None,
        PathList(),
        "Instead of `train_features_file` and `train_labels_file`: the index of shards "
        "written by `kerasnmt prepare` (`NAME.index.json`), or a list of them. Training "
        "then reads token ids, with no tokenization in the loop, and plans its batches "
        "from the stored lengths (a window of `train.sample_buffer_size` examples "
        "sorted by length and cut into batches, in shuffled order); a resumed run "
        "continues at the batch where it stopped.",
    ),
    "train_alignments": Option(
        None,
        PathList(),
        "Pharaoh alignments of the training pairs (`0-0 1-2 ...`, source-target token "
        "indices), one line a pair; needed by `params.guided_alignment_type`.",
    ),
    "train_files_weights": Option(
        None,
        NumberList(),
        "With several training corpora: one weight a corpus; batches sample the corpora "
        "in proportion to their weights.",
    ),
    "eval_features_file": Option(None, Path(), "Validation source text."),
    "eval_labels_file": Option(
        None, Path(), "Validation target text (the references of `eval.scorers`)."
    ),
}


def check_data_files(data, error):
    """Reports, through `error(path, message)`, training and validation files that do not
    go together: text with shards, a source without its target, counts that differ."""
    features, labels = data["train_features_file"], data["train_labels_file"]
    if data["sentencepiece_sampling_alpha"] is not None:
        if data["source_sentencepiece"] is None and data["target_sentencepiece"] is None:
            error("data.sentencepiece_sampling_alpha", "given without a SentencePiece model "
                  "(data.source_sentencepiece or data.target_sentencepiece)")
        for key in ("train_shards", "train_alignments"):
            if data[key] is not None:
                error("data.sentencepiece_sampling_alpha", f"given with data.{key}, which "
                      "hold one segmentation of each sentence")
    if data["train_shards"] is not None:
        if features is not None:
            error("data.train_shards", "given with data.train_features_file: train from "
                  "shards or from text, not both")
        elif data["train_alignments"] is not None:
            error("data.train_alignments", "given with data.train_shards (shards store "
                  "the alignments given to kerasnmt prepare)")
        elif data["train_files_weights"] is not None and len(data["train_files_weights"]) != len(
                data["train_shards"]):
            error("data.train_files_weights", f"{len(data['train_files_weights'])} entries for "
                  f"{len(data['train_shards'])} indexes in data.train_shards")
        return
    if (features is None) != (labels is None):
        missing = "train_labels_file" if labels is None else "train_features_file"
        error(f"data.{missing}", "required with the other training file but not set")
    for key in ("train_alignments", "train_files_weights"):
        if data[key] is None:
            continue
        if features is None:
            error(f"data.{key}", "given without data.train_features_file")
        elif len(data[key]) != len(features):
            error(
                f"data.{key}",
                f"{len(data[key])} entries for {len(features)} files in data.train_features_file",
            )
    if features is not None and labels is not None and len(labels) != len(features):
        error(
            "data.train_labels_file",
            f"{len(labels)} files for {len(features)} files in data.train_features_file",
        )
    if (data["eval_features_file"] is None) != (data["eval_labels_file"] is None):
        missing = "eval_labels_file" if data["eval_labels_file"] is None else "eval_features_file"
        error(f"data.{missing}", "required with the other evaluation file but not set")

