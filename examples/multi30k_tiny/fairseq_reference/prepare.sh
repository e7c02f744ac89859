#!/bin/bash
# fairseq 0.12.2, patched to run on Python 3.12, numpy 2 and PyTorch >= 2.6, in DIR (not
# installed: PYTHONPATH), and the authors' data binarized; then run.sh trains and scores.
# Usage: prepare.sh DIR PAPER_DATA   (PAPER_DATA: paper_text.py prepare's output directory)
# Needs pip (to download), a C++ compiler, and a Python with torch, numpy, cython,
# pyyaml, regex, sacrebleu and tqdm.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); DIR=$1; DATA=$2; PY=${PY:-python3}
mkdir -p $DIR/downloads $DIR/site && cd $DIR
$PY -m pip download -q --no-deps -d downloads --no-binary fairseq fairseq==0.12.2 \
  hydra-core==1.0.7 omegaconf==2.0.6 antlr4-python3-runtime==4.8 bitarray
tar xzf downloads/fairseq-0.12.2.tar.gz
(cd site && for w in ../downloads/*.whl; do unzip -qo $w; done \
  && tar xzf ../downloads/antlr4-python3-runtime-4.8.tar.gz \
  && mv antlr4-python3-runtime-4.8/src/antlr4 . && rm -rf antlr4-python3-runtime-4.8)
patch -p0 < $HERE/fairseq-0.12.2-py312.patch
cp $HERE/build_fast.py $HERE/average_checkpoints.py $HERE/run.sh fairseq-0.12.2/
(cd fairseq-0.12.2 && $PY build_fast.py > ../build.log 2>&1)
PYTHONPATH=$DIR/site:$DIR/fairseq-0.12.2 $PY fairseq-0.12.2/fairseq_cli/preprocess.py \
  --source-lang en --target-lang de --trainpref $DATA/train --validpref $DATA/val \
  --testpref $DATA/test_2016_flickr --destdir data-bin --workers 2 --joined-dictionary
