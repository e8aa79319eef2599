#!/usr/bin/env bash
# Runs a Java main class with Kafka's libs on the classpath (the layout of the official image).
base_dir=$(cd "$(dirname "$0")/.." && pwd)
: "${KAFKA_HEAP_OPTS:=-Xmx256M}"
: "${KAFKA_JVM_PERFORMANCE_OPTS:=-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -Djava.awt.headless=true}"
: "${KAFKA_LOG4J_OPTS:=@LOG4J_TOOLS_OPTS@}"
# shellcheck disable=SC2086
exec java $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_LOG4J_OPTS $KAFKA_OPTS \
  -cp "$base_dir/libs/*" "$@"
