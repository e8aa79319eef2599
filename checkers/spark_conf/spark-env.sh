# Spark's launcher (bin/load-spark-env.sh) sources this file, exporting what it sets, when
# kafka-chaos starts the checker's JVM and the caller configures no Spark of their own
# (checkers/session.py). Two malloc arenas for that JVM and its children only; a value the
# caller exported wins.
MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
