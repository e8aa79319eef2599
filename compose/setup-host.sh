#!/usr/bin/env bash
# Prepares this host for kafka-chaos: system packages and a running Docker engine.
# Idempotent. On a user's machine with Docker already running it changes nothing there.
# Only installs when root on Debian/Ubuntu (apt-get present); otherwise it says what is missing.
set -euo pipefail

log() { printf '[setup-host] %s\n' "$*" >&2; }

need=()
command -v docker >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)  # the compose-file path
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)  # clusters reached over SSH
if [ "${KAFKA_CHAOS_BROWSER:-1}" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi

# dockerd may be absent even when the docker client is there (client-only installs).
engine_up() { timeout 10 docker info >/dev/null 2>&1; }
if ! engine_up && ! command -v dockerd >/dev/null 2>&1; then
  need+=(docker.io)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${need[@]}" >/dev/null
  else
    log "missing: ${need[*]} (install them, or run as root on Debian to let this script do it)"
    exit 1
  fi
fi

if ! engine_up; then
  if [ "$(id -u)" != 0 ]; then
    log "no Docker engine answers and we are not root: start Docker and retry"
    exit 1
  fi
  log "starting dockerd (log: /var/log/kafka-chaos-dockerd.log)"
  nohup dockerd >/var/log/kafka-chaos-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    engine_up && break
    sleep 1
  done
  engine_up || { log "dockerd did not answer within 60 s; see /var/log/kafka-chaos-dockerd.log"; exit 1; }
fi
log "docker engine: $(docker version --format '{{.Server.Version}}')"
