#!/usr/bin/env bash
# Regenerates the binary seed corpora (tests/fuzz/corpus/) from the text
# protos in tests/fuzz/seeds/. Run after editing a seed; commit both.
#   seeds/executable_load/NAME.txtpb  a neuron.rtd.v1.ExecutableBody
#   seeds/executable_load/NAME.neff   a NEFF (copied as it is; tests/fake_nrt's make_test_neff
#                                     writes them)
#   seeds/rpc/NN_F_TYPE[_NOTE].txtpb   a neuron.rtd.v1.TYPE request for method NN of
#                                      rpc_fuzz.cc's table, flags F (1: use the live session)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SEEDS="$ROOT/tests/fuzz/seeds" CORPUS="$ROOT/tests/fuzz/corpus"
encode() {  # MESSAGE_TYPE PROTO_FILE < text > binary
  protoc --proto_path="$ROOT/proto" --encode="neuron.rtd.v1.$1" "$ROOT/proto/$2"
}
rm -f "$CORPUS"/executable_load/*.bin "$CORPUS"/rpc/*.bin
mkdir -p "$CORPUS/executable_load" "$CORPUS/rpc"
for seed in "$SEEDS"/executable_load/*.txtpb; do
  name="$(basename "$seed" .txtpb)"
  encode ExecutableBody neuron/rtd/v1/executable.proto <"$seed" >"$CORPUS/executable_load/$name.bin"
done
for seed in "$SEEDS"/executable_load/*.neff; do
  cp "$seed" "$CORPUS/executable_load/$(basename "$seed" .neff).bin"
done
for seed in "$SEEDS"/rpc/*.txtpb; do
  name="$(basename "$seed" .txtpb)"
  IFS=_ read -r method flags type _ <<<"$name"
  proto=neuron/rtd/v1/runtime.proto
  grep -q "^message $type " "$ROOT/proto/neuron/rtd/v1/admin.proto" && proto=neuron/rtd/v1/admin.proto
  {
    printf "\\x$(printf %02x "$((10#$method))")\\x$(printf %02x "$flags")"
    encode "$type" "$proto" <"$seed"
  } >"$CORPUS/rpc/$name.bin"
done
