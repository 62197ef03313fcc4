#!/usr/bin/env bash
set -euo pipefail
cd ${S36:-/work/s36}
TT=/work/main/build/cli/tensortier
/work/main/build/bench/make_torchscript_models --out ts
for f in ts/*.pt; do m=$(basename $f .pt); $TT profile --torchscript $f --out ts/$m.ttwl > ts/$m.log 2>&1; echo ts $m $(date +%T); done
mkdir -p zoo paper
for m in alexnet inception_v3 mobilenet_v2 resnet101 resnet152 resnet18 resnet34 resnet50 vgg16 vgg19; do
  $TT profile --model $m --batch 2 --image-size 32 --out zoo/$m.ttwl > zoo/$m.log 2>&1; echo zoo $m $(date +%T); done
for m in alexnet inception_v3 mobilenet_v2 resnet152 vgg19; do
  $TT profile --model $m --batch 8 --image-size 128 --out paper/$m.ttwl > paper/$m.log 2>&1; echo paper $m $(date +%T); done
