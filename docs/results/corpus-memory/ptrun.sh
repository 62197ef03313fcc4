#!/usr/bin/env bash
# ptrun.sh BIN OUT [BUDGET]: PT9's corpus (session thirty-two) from the profiles under $PROFILES:
# zoo/M.ttwl (tensortier profile --model M --batch 2 --image-size 32), paper/M.ttwl (--batch 8
# --image-size 128), ts/M.ttwl (bench/make_torchscript_models, then profile --torchscript).
# SEED=N in the environment adds --seed N (session thirty-five's seeds, ../plan-attribution/);
# EXTRA adds flags (session thirty-six: EXTRA='--room-labels true'); EXTRA_WORKLOADS adds corpus
# workloads (session thirty-seven: EXTRA_WORKLOADS='synthetic:transformer:8 synthetic:transformer:16').
set -euo pipefail
cd "${PROFILES:-.}"
z=zoo; p=paper
/usr/bin/time -v "$1" pretrain --workloads $z/alexnet.ttwl $z/inception_v3.ttwl $z/mobilenet_v2.ttwl $z/resnet101.ttwl \
  $z/resnet152.ttwl $z/resnet18.ttwl $z/resnet34.ttwl $z/resnet50.ttwl $z/vgg16.ttwl $z/vgg19.ttwl \
  $p/alexnet.ttwl $p/inception_v3.ttwl $p/mobilenet_v2.ttwl $p/resnet152.ttwl $p/vgg19.ttwl \
  synthetic:vgg:12 synthetic:resnet:12 synthetic:mobilenet:12 synthetic:rnn:16 synthetic:rnn:32 ${EXTRA_WORKLOADS:-} \
  --validation-workloads ts/densenet_like.ttwl ts/unet_like.ttwl ts/vit_like.ttwl \
  --dram-fractions 0.1 0.2 0.35 --out "$2" ${3:+--resident-slot-bytes $3} ${SEED:+--seed $SEED} ${EXTRA:-}
