#!/usr/bin/env bash
exec "$(dirname "$0")/kafka-run-class.sh" @CONFIG_COMMAND@ "$@"
