#!/bin/sh
# A compiled model run on a remote device, as a user does it: loom-rpc-server on 127.0.0.1 (any
# free port, bounded to two sessions and 300 s), `loom run --backend rpc://...` against the local
# run's output with --tolerance 0, and the config check refusing a model for another config.
# With TRANSPORT tls: the server's key pair from `loom-rpc-server keygen`, the server on TLS, and
# the client on rpc+tls:// pinned to the fingerprint the server printed.
# Usage: loom_rpc_cli.sh LOOM LOOM_RPC_SERVER MODEL.loom REFERENCE.npy BACKEND SEED OTHER_CONFIG.loom [TRANSPORT]
set -eu
loom=$1 server=$2 model=$3 reference=$4 backend=$5 seed=$6 other=$7 transport=${8:-plain}
log=$(mktemp)
keys=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$log" "$keys"' EXIT
pid=
tls=
if [ "$transport" = tls ]; then
  "$server" keygen --out "$keys" --name server --host 127.0.0.1
  tls="--tls-cert $keys/server.crt --tls-key $keys/server.key"
fi
# shellcheck disable=SC2086
"$server" --port 0 --backend "$backend" --sessions 2 --exit-after 300 $tls >"$log" 2>&1 &
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
url="rpc://127.0.0.1:$port/$backend"
if [ "$transport" = tls ]; then
  fp=$(sed -n 's/^TLS certificate \(sha256:[0-9a-f]*\):.*/\1/p' "$log")
  [ -n "$fp" ] || { cat "$log"; echo "the TLS server printed no fingerprint"; exit 1; }
  url="rpc+tls://127.0.0.1:$port/$backend?fp=$fp"
fi
echo "device: $url"
"$loom" run "$model" --backend "$url" --seed "$seed" --reference "$reference" --tolerance 0
if "$loom" run "$other" --backend "$url" 2>"$log.err"; then
  echo "a model for another config ran"; exit 1
fi
cat "$log.err"; rm -f "$log.err"
wait $pid
cat "$log"
