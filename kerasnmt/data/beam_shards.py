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
    alignment_file=None,
    num_shards=16,
    seed=0,
    pipeline_args=None,
):
    """`write_shards` as an Apache Beam pipeline; the files written are identical.

    Args:
        source_file, target_file, preprocessor, output_dir, name, alignment_file,
        num_shards, seed: as for `kerasnmt.data.write_shards`.
        pipeline_args: Beam pipeline options as command-line arguments, e.g.
            `["--runner=DirectRunner", "--direct_num_workers=2"]` (default: the
            `DirectRunner`); any runner whose workers see the files can be chosen.

    Returns:
        The path of the index file.

    Examples:
        >>> import os, tempfile
        >>> from kerasnmt.data.shards import read_shards
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> directory = tempfile.mkdtemp()
        >>> for name, text in (("src", "a b\\nb\\n"), ("tgt", "b\\na a\\n")):
        ...     with open(os.path.join(directory, name), "w") as file:
        ...         _ = file.write(text)
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> index = write_shards_with_beam(
        ...     os.path.join(directory, "src"), os.path.join(directory, "tgt"), preprocessor,
        ...     os.path.join(directory, "shards"), num_shards=2, seed=None)
        >>> [(f["ids"].tolist(), l["ids_out"].tolist())
        ...  for f, l in read_shards(index).as_numpy_iterator()]
        [([3, 4], [4, 2]), ([4], [3, 3, 2])]
    """
    tasks, index, index_path = plan_shards(
        source_file, target_file, preprocessor, output_dir, name, alignment_file, num_shards, seed
    )
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
