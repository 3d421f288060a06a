#!/usr/bin/env bash
# Worker threads or worker processes? CPU per transaction and resident memory of quicpool with two
# workers, both ways, under the same load: pgbench -S -c 50 over TCP, 20 server connections in all.
#   threads:   one daemon, workers.count = 2, pool.size = 20
#   processes: two daemons of one worker each (pool.size = 10 each) on two ports, pgbench -c 25
#              against each at the same time (no supervisor process is counted)
# Usage (after a build; needs pgbench): apps/bench/scripts/threads-vs-processes.sh [ROUNDS] [SECONDS]
# Prints one line per run: transactions, µs of CPU per transaction (utime+stime of the daemon
# processes, /proc), resident memory (VmRSS). Runs alternate, so load drifts hit both alike.
set -euo pipefail
ROUNDS=${1:-3}
SECONDS_PER_RUN=${2:-15}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CLI="$ROOT/apps/pooler/dist/cli.js"
WORK=$(mktemp -d /tmp/quicpool-tvp-XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$WORK"; }
trap cleanup EXIT

# start NAME WORKERS POOL [CONFIG]: a daemon in $WORK/NAME; sets PID and PORT
start() {
  local log="$WORK/$1.log" config=()
  [ -n "${4:-}" ] && config=(--config "$4")
  node "$CLI" start "${config[@]}" --state-dir "$WORK/state-$1" --pg-port "$PGPORT" --port 0 --set listen.quic=false \
    --set metrics.enabled=false --set log.level=warn --set workers.count="$2" --set pool.size="$3" > "$log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 100); do grep -q 'quicpool is ready' "$log" && break; sleep 0.1; done
  PORT=$(grep -o 'Listening: tcp 127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$')
}
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }     # clock ticks (1/100 s)
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; } # kB
processed() { awk '/actually processed/ {print $NF}' "$1"; }

# One embedded PostgreSQL for both: the first daemon starts it, the others use it as upstream.
PGPORT=$((54000 + RANDOM % 1000))
start pg 1 1
URL=$(grep -o 'postgresql://[^ ]*/postgres' "$WORK/pg.log" | head -1)
PASSWORD=$(sed 's|postgresql://postgres:\([^@]*\)@.*|\1|' <<< "$URL")
printf '[upstream]\nhost = "127.0.0.1"\nport = %s\n[users.postgres]\npassword = "%s"\n' "$PGPORT" "$PASSWORD" > "$WORK/up.toml"
pgbench -i -s 1 -q "postgresql://postgres:$PASSWORD@127.0.0.1:$PGPORT/postgres?sslmode=disable" > /dev/null 2>&1
DB() { echo "postgresql://postgres:$PASSWORD@127.0.0.1:$1/postgres?sslmode=disable"; }

for round in $(seq "$ROUNDS"); do
  start t 2 20 "$WORK/up.toml"; T=$PID; TP=$PORT
  pgbench -n -S -c 50 -j 2 -T 3 "$(DB "$TP")" > /dev/null 2>&1
  c0=$(cpu "$T"); pgbench -n -S -c 50 -j 2 -T "$SECONDS_PER_RUN" "$(DB "$TP")" > "$WORK/t.out" 2>&1; c1=$(cpu "$T")
  tx=$(processed "$WORK/t.out")
  echo "round $round threads:   $tx transactions, $(( (c1 - c0) * 10000 / tx )) µs CPU/tx, $(( $(rss "$T") / 1024 )) MB resident"
  kill "$T"; wait "$T" 2>/dev/null || true

  start a 1 10 "$WORK/up.toml"; A=$PID; AP=$PORT
  start b 1 10 "$WORK/up.toml"; B=$PID; BP=$PORT
  pgbench -n -S -c 25 -j 1 -T 3 "$(DB "$AP")" > /dev/null 2>&1 &
  W=$!
  pgbench -n -S -c 25 -j 1 -T 3 "$(DB "$BP")" > /dev/null 2>&1
  wait "$W" || true
  a0=$(cpu "$A"); b0=$(cpu "$B")
  pgbench -n -S -c 25 -j 1 -T "$SECONDS_PER_RUN" "$(DB "$AP")" > "$WORK/a.out" 2>&1 &
  W=$!
  pgbench -n -S -c 25 -j 1 -T "$SECONDS_PER_RUN" "$(DB "$BP")" > "$WORK/b.out" 2>&1
  wait "$W" || true
  a1=$(cpu "$A"); b1=$(cpu "$B")
  tx=$(( $(processed "$WORK/a.out") + $(processed "$WORK/b.out") ))
  echo "round $round processes: $tx transactions, $(( (a1 - a0 + b1 - b0) * 10000 / tx )) µs CPU/tx, $(( ($(rss "$A") + $(rss "$B")) / 1024 )) MB resident"
  kill "$A" "$B"; wait "$A" "$B" 2>/dev/null || true
done
