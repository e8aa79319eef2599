#!/usr/bin/env bash
exec "$(dirname "$0")/kafka-run-class.sh" @STORAGE_TOOL@ "$@"
