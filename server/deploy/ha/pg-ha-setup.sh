#!/usr/bin/env bash
#? Creates one machine's part of AdmitOne's highly available PostgreSQL
#? (pg_auto_failover: a monitor and two data nodes with synchronous
#? replication), with the timers the failover tests and `make faults`
#? measured. Run it as the user PostgreSQL runs as (`postgres`), once per
#? machine, then start the machine's `pg_autoctl@.service`. The tests'
#? loopback formation (scripts/pg-ha.sh) is created by this same script.
#?
#?   pg-ha-setup.sh monitor PGDATA PORT HOSTNAME [OPTION…]
#?       the monitor's PostgreSQL (database pg_auto_failover)
#?   pg-ha-setup.sh timers MONITOR_SUPERUSER_URI
#?       the monitor's health-check and demote timers (the monitor running)
#?   pg-ha-setup.sh node PGDATA PORT HOSTNAME NAME MONITOR_URI [OPTION…]
#?       a data node of database `admitone`: the first registered is the
#?       primary, the second its synchronous standby
#?
#? OPTIONs go to `pg_autoctl create` as they are: in production
#? `--ssl-self-signed` (or `--ssl-ca-file …`) and `--auth scram-sha-256`;
#? scripts/pg-ha.sh passes `--listen 127.0.0.1 --auth trust --no-ssl`.
#?
#? The timers (why: docs/operations/high-availability.md): the monitor
#? checks every second and calls a node unhealthy after 2 s; a node cut off
#? from the monitor and its peer stops serving after 4 s
#? (network_partition_timeout); the monitor promotes the standby only
#? after 6 s (primary_demote_timeout), so two primaries never take writes
#? at once. The HA_* variables below override them (for experiments only:
#? the docs' fencing argument holds for these values).
set -euo pipefail

HA_HEALTH_CHECK_PERIOD_MS=${HA_HEALTH_CHECK_PERIOD_MS:-1000}
HA_UNHEALTHY_AFTER_MS=${HA_UNHEALTHY_AFTER_MS:-2000}
HA_PARTITION_SECS=${HA_PARTITION_SECS:-4}
HA_DEMOTE_MS=${HA_DEMOTE_MS:-6000}

usage() { sed -n 's/^#? \{0,1\}//p' "$0" >&2; exit 2; }

command=${1:-}; shift || true
case "$command" in
  monitor)
    [ $# -ge 3 ] || usage
    pgdata=$1 port=$2 host=$3; shift 3
    exec pg_autoctl create monitor --pgdata "$pgdata" --pgport "$port" \
      --hostname "$host" "$@"
    ;;
  timers)
    [ $# -eq 1 ] || usage
    for setting in "health_check_period = $HA_HEALTH_CHECK_PERIOD_MS" \
      "health_check_timeout = $HA_HEALTH_CHECK_PERIOD_MS" "health_check_max_retries = 1" \
      "health_check_retry_delay = 500" "node_considered_unhealthy_timeout = $HA_UNHEALTHY_AFTER_MS" \
      "primary_demote_timeout = $HA_DEMOTE_MS"; do
      psql -X -q -At "$1" -v ON_ERROR_STOP=1 -c "ALTER SYSTEM SET pgautofailover.$setting" >/dev/null
    done
    psql -X -q -At "$1" -v ON_ERROR_STOP=1 -c "SELECT pg_reload_conf()" >/dev/null
    ;;
  node)
    [ $# -ge 5 ] || usage
    pgdata=$1 port=$2 host=$3 name=$4 monitor=$5; shift 5
    pg_autoctl create postgres --pgdata "$pgdata" --pgport "$port" --hostname "$host" \
      --name "$name" --dbname admitone --monitor "$monitor" "$@"
    pg_autoctl config set --pgdata "$pgdata" timeout.network_partition_timeout "$HA_PARTITION_SECS" >/dev/null
    ;;
  *) usage ;;
esac
