#!/usr/bin/env bash
# Runs a Java main class with Kafka's libs on the classpath (the layout of the official image).
base_dir=$(cd "$(dirname "$0")/.." && pwd)
: "${KAFKA_HEAP_OPTS:=-Xmx256M}"
# Tuned for starting several JVMs at once on a small machine (a cluster of 3-8 nodes on 2
# cores, brokers restarted by faults): the C1 compiler only and the serial collector cost
# about half the CPU of C2 and G1 until a broker serves; our workloads write hundreds of
# records a second, far below what C1-compiled brokers sustain. The class-data archive made
# when the image is built (kc-class-archive.sh) saves a quarter more. Set
# KAFKA_JVM_PERFORMANCE_OPTS in the container to run with other flags.
if [ -z "${KAFKA_JVM_PERFORMANCE_OPTS+x}" ]; then
  KAFKA_JVM_PERFORMANCE_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"
  if [ -r "$base_dir/kafka.jsa" ]; then
    KAFKA_JVM_PERFORMANCE_OPTS="$KAFKA_JVM_PERFORMANCE_OPTS -XX:SharedArchiveFile=$base_dir/kafka.jsa"
  fi
fi
: "${KAFKA_LOG4J_OPTS:=@LOG4J_TOOLS_OPTS@}"
# shellcheck disable=SC2086
exec java $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_LOG4J_OPTS $KAFKA_OPTS \
  -cp "$base_dir/libs/*" "$@"
