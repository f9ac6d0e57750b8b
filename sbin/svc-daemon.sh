#!/usr/bin/env bash
# Shared by the start and stop scripts of each role: where svc lives, its configuration, pid files and logs.
# Sourced, never run. Every setting comes from the environment or from ${SVC_CONF_DIR}/svc-env.sh (see
# etc/svc-env.sh.template); docs/deployment.md lists them.

svc_sbin="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SVC_HOME="${SVC_HOME:-$(cd "${svc_sbin}/.." && pwd)}"
export SVC_CONF_DIR="${SVC_CONF_DIR:-${SVC_HOME}/etc}"

if [[ -f "${SVC_CONF_DIR}/svc-env.sh" ]]; then
  # The operator's settings: exported variables only, read before the defaults below.
  set -a
  # shellcheck source=/dev/null
  . "${SVC_CONF_DIR}/svc-env.sh"
  set +a
fi

export SVC_LOG_DIR="${SVC_LOG_DIR:-${SVC_HOME}/logs}"
export SVC_PID_DIR="${SVC_PID_DIR:-${SVC_HOME}/pids}"
export SVC_NODE="${SVC_NODE:-node}"
# The command line that runs svc: the installed package's compiled binary when present, else the source tree's.
if [[ -z "${SVC_COMMAND:-}" ]]; then
  if [[ -f "${SVC_HOME}/dist/bin/svc.js" ]]; then
    SVC_COMMAND="${SVC_NODE} ${SVC_HOME}/dist/bin/svc.js"
  else
    SVC_COMMAND="${SVC_NODE} ${SVC_HOME}/bin/svc.mjs"
  fi
fi
# glibc's mmap threshold fixed at 16 MiB: large frames get mappings of their own, given back when freed; its trim
# threshold at 64 MiB: freed heap up to that stays resident for the next frames instead of being faulted in again
# (docs/operations.md, "Memory and the allocator"; the server warns at start without the first).
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-16777216}"
export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-67108864}"
# How long a start waits for the `listening` line, and a stop for the process to end (a worker's graceful shutdown
# takes up to svc.worker.graceful.shutdown.timeout, 600 s by default).
SVC_START_TIMEOUT="${SVC_START_TIMEOUT:-60}"
SVC_MASTER_STOP_TIMEOUT="${SVC_MASTER_STOP_TIMEOUT:-60}"
SVC_WORKER_STOP_TIMEOUT="${SVC_WORKER_STOP_TIMEOUT:-630}"
# Several workers on one host: give each its own SVC_INSTANCE (and its own ports and directories).
SVC_INSTANCE="${SVC_INSTANCE:-1}"
# How many rotated logs are kept (svc-<role>-<instance>.log.1 is the newest).
SVC_LOG_KEEP="${SVC_LOG_KEEP:-5}"

svc_fail() {
  echo "$*" >&2
  exit 1
}

svc_pid_file() { echo "${SVC_PID_DIR}/svc-$1-${SVC_INSTANCE}.pid"; }
svc_log_file() { echo "${SVC_LOG_DIR}/svc-$1-${SVC_INSTANCE}.log"; }

# The pid in the role's pid file when that process is still alive; empty otherwise.
svc_running_pid() {
  local pid_file pid
  pid_file="$(svc_pid_file "$1")"
  [[ -f "${pid_file}" ]] || return 0
  pid="$(cat "${pid_file}")"
  if [[ "${pid}" =~ ^[0-9]+$ ]] && kill -0 "${pid}" 2>/dev/null; then echo "${pid}"; fi
}

svc_rotate_log() {
  local log="$1" i
  [[ -f "${log}" ]] || return 0
  for ((i = SVC_LOG_KEEP - 1; i >= 1; i--)); do
    [[ -f "${log}.${i}" ]] && mv -f "${log}.${i}" "${log}.$((i + 1))"
  done
  mv -f "${log}" "${log}.1"
}

# The arguments svc takes for every role: the configuration file when the operator has one.
svc_conf_args() {
  if [[ -f "${SVC_CONF_DIR}/svc-defaults.conf" ]]; then
    printf '%s\n' --conf-file "${SVC_CONF_DIR}/svc-defaults.conf"
  fi
}

# Starts `svc <role> <args...>` in the background, writes its pid file and waits for its `listening` line (printed
# to the caller), or for its exit (its last log lines printed, status 1). With SVC_FOREGROUND=1 it replaces this
# shell instead (containers and systemd keep the process in the foreground).
svc_start() {
  local role="$1"
  shift
  local pid_file log running
  pid_file="$(svc_pid_file "${role}")"
  log="$(svc_log_file "${role}")"
  local -a conf_args
  mapfile -t conf_args < <(svc_conf_args)
  local opts_var="SVC_${role^^}_NODE_OPTIONS"
  if [[ "${SVC_FOREGROUND:-0}" == 1 ]]; then
    # shellcheck disable=SC2086 # SVC_COMMAND is a command line
    NODE_OPTIONS="${!opts_var:-${NODE_OPTIONS:-}}" exec ${SVC_COMMAND} "${role}" "${conf_args[@]}" "$@"
  fi
  running="$(svc_running_pid "${role}")"
  [[ -z "${running}" ]] || svc_fail "svc ${role} ${SVC_INSTANCE} is running as process ${running}; stop it first."
  mkdir -p "${SVC_LOG_DIR}" "${SVC_PID_DIR}" || svc_fail "cannot create ${SVC_LOG_DIR} or ${SVC_PID_DIR}"
  svc_rotate_log "${log}"
  echo "starting svc ${role} ${SVC_INSTANCE}, logging to ${log}"
  # shellcheck disable=SC2086 # SVC_COMMAND is a command line
  NODE_OPTIONS="${!opts_var:-${NODE_OPTIONS:-}}" nohup ${SVC_COMMAND} "${role}" "${conf_args[@]}" "$@" \
    >"${log}" 2>&1 </dev/null &
  local pid=$!
  echo "${pid}" >"${pid_file}"
  local waited=0 line
  while ((waited < SVC_START_TIMEOUT * 10)); do
    line="$(grep -m1 '"event":"listening"' "${log}" 2>/dev/null || true)"
    if [[ -n "${line}" ]]; then
      echo "svc ${role} ${SVC_INSTANCE} is running as process ${pid}: ${line}"
      return 0
    fi
    if ! kill -0 "${pid}" 2>/dev/null; then
      rm -f "${pid_file}"
      echo "svc ${role} ${SVC_INSTANCE} exited while starting; the end of ${log}:" >&2
      tail -n 20 "${log}" >&2
      return 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "svc ${role} ${SVC_INSTANCE} (process ${pid}) printed no listening line in ${SVC_START_TIMEOUT} s; see ${log}" >&2
  return 1
}

# Sends SIGTERM (a worker's configured exit: graceful when svc.worker.graceful.shutdown.enabled) and waits up to
# `timeout` seconds for the process to end; past that it is killed, and the status says so.
svc_stop() {
  local role="$1" timeout="$2"
  local pid_file pid
  pid_file="$(svc_pid_file "${role}")"
  pid="$(svc_running_pid "${role}")"
  if [[ -z "${pid}" ]]; then
    rm -f "${pid_file}"
    echo "no svc ${role} ${SVC_INSTANCE} to stop"
    return 0
  fi
  echo "stopping svc ${role} ${SVC_INSTANCE} (process ${pid})"
  kill -TERM "${pid}"
  local waited=0
  while kill -0 "${pid}" 2>/dev/null; do
    if ((waited >= timeout * 10)); then
      echo "svc ${role} ${SVC_INSTANCE} did not stop within ${timeout} s; killing process ${pid}" >&2
      kill -KILL "${pid}" 2>/dev/null || true
      rm -f "${pid_file}"
      return 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  rm -f "${pid_file}"
  echo "svc ${role} ${SVC_INSTANCE} stopped"
}
