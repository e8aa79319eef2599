#!/usr/bin/env bash
# Run once while the image is built: starts a single-node KRaft server until it serves,
# stops it, and keeps the classes it loaded in a class-data-sharing archive
# (/opt/kafka/kafka.jsa) that every later JVM of the image maps instead of loading and
# verifying the same ~5000 classes again. Best effort: without an archive the JVMs start
# as before, only slower.
set -u
base_dir=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cat > "$work/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:19093
listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093
controller.listener.names=CONTROLLER
log.dirs=$work/data
PROPS
# kafka-run-class.sh's default flags (no archive yet), plus the request to write one at exit.
export KAFKA_OPTS="-XX:ArchiveClassesAtExit=$base_dir/kafka.jsa"
export KAFKA_HEAP_OPTS="-Xmx256m"
"$base_dir/bin/kafka-storage.sh" format -t AAAAAAAAAAAAAAAAAAAAAA -c "$work/server.properties" >/dev/null \
  || { echo "class archive: format failed" >&2; rm -rf "$work"; exit 0; }
"$base_dir/bin/kafka-server-start.sh" "$work/server.properties" > "$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do  # at most 120 s
  grep -q 'Kafka Server started\|Transition from STARTING to STARTED' "$work/server.log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
ls -l "$base_dir/kafka.jsa" >&2 || echo "class archive: none written" >&2
rm -rf "$work"
exit 0
