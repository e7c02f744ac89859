#!/bin/bash
# fairseq 0.12.2 (patched for Python 3.11+, numpy 2 and torch >= 2.6) on Wu et al.'s
# published Multi30k recipe (the fork's README-baseline.md command, transformer_tiny as
# command-line sizes), their BPE data binarized with --joined-dictionary; then the average
# of the last 10 epoch checkpoints, beam 5, --remove-bpe, on valid and test (2016).
# Usage: run.sh OUT_DIR   (run from prepare.sh's DIR/fairseq-0.12.2; env: PY, MAXUPD,
# SEED, NEPOCH, EXTRA, e.g. EXTRA=--cpu)
set -euo pipefail
F=$(cd "$(dirname "$0")" && pwd); H=$(dirname $F)
PY=${PY:-python3}; O=$1
MAXUPD=${MAXUPD:-8000}; SEED=${SEED:-1}; NEPOCH=${NEPOCH:-10}; EXTRA=${EXTRA:-}
export PYTHONPATH=$H/site:$F
mkdir -p $O/ckpt
S=$(date +%s)
$PY $F/fairseq_cli/train.py $H/data-bin --task translation --arch transformer \
  --encoder-layers 4 --decoder-layers 4 --encoder-embed-dim 128 --decoder-embed-dim 128 \
  --encoder-ffn-embed-dim 256 --decoder-ffn-embed-dim 256 \
  --encoder-attention-heads 4 --decoder-attention-heads 4 \
  --share-all-embeddings --dropout 0.3 \
  --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 25 \
  --lr-scheduler inverse_sqrt --warmup-updates 2000 --warmup-init-lr 1e-07 --lr 0.005 \
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
  --max-tokens 8192 --max-update $MAXUPD --patience 10 --keep-last-epochs $NEPOCH \
  --seed $SEED --save-dir $O/ckpt --log-format simple --log-interval 500 --no-progress-bar \
  --no-last-checkpoints --no-save-optimizer-state --num-workers 2 \
  $EXTRA > $O/train.log 2>&1
echo "train: $(( $(date +%s) - S )) s"
$PY $F/average_checkpoints.py --inputs $O/ckpt --output $O/ckpt/avg.pt --num-epoch-checkpoints $NEPOCH > $O/average.log 2>&1
grep -o "averaging checkpoints.*" $O/average.log | head -c 400 || tail -3 $O/average.log; echo
for split in valid test; do
  $PY $F/fairseq_cli/generate.py $H/data-bin --task translation --beam 5 \
    --batch-size 128 --remove-bpe --gen-subset $split --path $O/ckpt/avg.pt $EXTRA > $O/gen_$split.txt 2>&1
  grep "BLEU4" $O/gen_$split.txt || tail -5 $O/gen_$split.txt
done
grep -E "epoch [0-9]+ \| valid on" $O/train.log | tail -3
echo "total: $(( $(date +%s) - S )) s"
