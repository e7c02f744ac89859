"""Writing sharded corpora with Apache Beam, beyond one machine (`kerasnmt[beam]`).

The pipeline runs the same per-shard function as `write_shards`
(`kerasnmt.data.shard_writer.write_shard`), one shard a Beam element, so it writes the same
bytes; the launcher plans the shards (one indexing pass over the corpus) and the
pipeline's last step checks the counts and writes the index. The corpus, the temporary
decompressed copies of `.gz` inputs and `output_dir` must be on a filesystem every
Beam worker sees (any local path with the default `DirectRunner`).
"""

import apache_beam as beam
import keras
from apache_beam.options.pipeline_options import PipelineOptions

from kerasnmt.data.shard_writer import finish_shards, plan_shards, write_shard


class _WriteShard(beam.DoFn):
    """Rebuilds the preprocessor once per worker, then writes the shards it is given."""

    def __init__(self, preprocessor_config):
        self.preprocessor_config = preprocessor_config
        self.preprocessor = None

    def setup(self):
        self.preprocessor = keras.saving.deserialize_keras_object(self.preprocessor_config)

    def process(self, task):
        yield write_shard(task, self.preprocessor)


def write_shards_with_beam(
    source_file,
    target_file,
    preprocessor,
    output_dir,
    name="train",
    pipeline_args=None,
    **shard_options,
):
    """`write_shards` as an Apache Beam pipeline; the files written are identical.

    Args:
        source_file, target_file, preprocessor, output_dir, name: as for
            `kerasnmt.data.write_shards`.
        pipeline_args: Beam pipeline options as command-line arguments, e.g.
            `["--runner=DirectRunner", "--direct_num_workers=2"]` (default: the
            `DirectRunner`); any runner whose workers see the files can be chosen.
        **shard_options: `alignment_file`, `num_shards` and `seed`, as for `write_shards`
            (its other options are for local processes).

    Returns:
        The path of the index file.

    Examples:
        >>> import filecmp, pathlib, tempfile
        >>> from kerasnmt.data.shards import write_shards
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> corpus = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (corpus / "src").write_text("a b\\nb\\na\\n"), (corpus / "tgt").write_text("b\\na a\\nb\\n")
        >>> arguments = (str(corpus / "src"), str(corpus / "tgt"),
        ...              TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]))
        >>> _ = write_shards_with_beam(*arguments, str(corpus / "beam"), num_shards=2)
        >>> _ = write_shards(*arguments, str(corpus / "local"), num_shards=2)
        >>> names = sorted(path.name for path in (corpus / "beam").iterdir())
        >>> names  # doctest: +NORMALIZE_WHITESPACE
        ['train-00000-of-00002.lengths.npy', 'train-00000-of-00002.tfrecord',
         'train-00001-of-00002.lengths.npy', 'train-00001-of-00002.tfrecord', 'train.index.json']
        >>> filecmp.cmpfiles(corpus / "beam", corpus / "local", names, shallow=False)[0] == names
        True
    """
    tasks, index, index_path = plan_shards(
        source_file, target_file, preprocessor, output_dir, name, **shard_options)
    config = keras.saving.serialize_keras_object(preprocessor)
    with beam.Pipeline(options=PipelineOptions(pipeline_args or [])) as pipeline:
        _ = (
            pipeline
            | "Shards" >> beam.Create(tasks)
            | "Spread" >> beam.Reshuffle()
            | "Write" >> beam.ParDo(_WriteShard(config))
            | "Collect" >> beam.combiners.ToList()
            | "Index" >> beam.Map(lambda counts: finish_shards(index, index_path, counts))
        )
    return index_path
