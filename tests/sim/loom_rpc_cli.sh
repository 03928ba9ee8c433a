#!/bin/sh
# A compiled model run on a remote device, as a user does it: loom-rpc-server on 127.0.0.1 (any
# free port, bounded to two sessions and 300 s), `loom run --backend rpc://...` against the local
# run's output with --tolerance 0, and the config check refusing a model for another config.
# Usage: loom_rpc_cli.sh LOOM LOOM_RPC_SERVER MODEL.loom REFERENCE.npy BACKEND SEED OTHER_CONFIG.loom
set -eu
loom=$1 server=$2 model=$3 reference=$4 backend=$5 seed=$6 other=$7
log=$(mktemp)
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
"$server" --port 0 --backend "$backend" --sessions 2 --exit-after 300 >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "^serving" "$log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
port=$(sed -n 's/^serving .* on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
if [ -z "$port" ]; then
  cat "$log"
  rc=0
  wait $pid || rc=$?
  [ $rc -eq 77 ] && exit 77  # the server is not there to test (the wrapper said why)
  echo "no server"
  exit 1
fi
"$loom" run "$model" --backend "rpc://127.0.0.1:$port/$backend" --seed "$seed" --reference "$reference" --tolerance 0
if "$loom" run "$other" --backend "rpc://127.0.0.1:$port/$backend" 2>"$log.err"; then
  echo "a model for another config ran"; exit 1
fi
cat "$log.err"; rm -f "$log.err"
wait $pid
cat "$log"
