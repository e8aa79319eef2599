#!/usr/bin/env bash
# Starts a broker/controller from a server.properties file.
base_dir=$(cd "$(dirname "$0")/.." && pwd)
: "${KAFKA_HEAP_OPTS:=-Xmx1G -Xms1G}"
export KAFKA_HEAP_OPTS
export KAFKA_LOG4J_OPTS="${KAFKA_LOG4J_OPTS:-@LOG4J_SERVER_OPTS@}"
exec "$base_dir/bin/kafka-run-class.sh" kafka.Kafka "$@"
