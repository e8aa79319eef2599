# Spark's launcher (bin/load-spark-env.sh) sources this file, exporting what it sets, when
# kafka-chaos starts the checker's JVM and the caller configures no Spark of their own
# (checkers/session.py). Two malloc arenas for that JVM and its children only; a value the
# caller exported wins.
MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"

# The checker's JVM yields the CPU to the cluster under test (niceness 5, raised only): it
# warms up in the background while a run's faults are timed, and a check may run while
# another run's cluster works. On a small machine a starved KRaft controller answers
# heartbeats late and fences healthy brokers. Idle CPU still goes to the check.
if [ "$(nice)" -lt 5 ]; then renice -n 5 -p $$ > /dev/null 2>&1 || true; fi
