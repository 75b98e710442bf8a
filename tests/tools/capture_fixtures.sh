#!/bin/bash
# capture_fixtures.sh: re-captures fixtures/pgoutput/*.bin from a throwaway
# PostgreSQL 15 cluster that it starts and stops itself.
#
#   tests/tools/capture_fixtures.sh [BUILD_DIR]
#
# BUILD_DIR (default: build) is a configured CMake build directory; the
# capture_pgoutput tool is built there first. Run as root (the cluster then
# runs as the postgres user) or as an ordinary user. PG_BIN overrides the
# server binaries (default /usr/lib/postgresql/15/bin).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=$(cd "${1:-$ROOT/build}" && pwd)
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
FIXTURES=$ROOT/fixtures/pgoutput
SQL=$FIXTURES/sql
CAPTURE=$BUILD_DIR/tests/tools/capture_pgoutput

cmake --build "$BUILD_DIR" --target capture_pgoutput >/dev/null

# Runs a command as the cluster's owner.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# A TCP port on 127.0.0.1 that nothing listens on.
free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
	echo "no free port found" >&2
	exit 1
}

TMP=$(mktemp -d /tmp/tidemark-capture.XXXXXX)
if [ "$(id -u)" -eq 0 ]; then
	chown postgres: "$TMP"
fi
DATA=$TMP/data
PORT=$(free_port)
STARTED=0

cleanup() {
	if [ "$STARTED" -eq 1 ]; then
		as_owner "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

as_owner "$PG_BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 \
	--locale=C >/dev/null
as_owner "$PG_BIN/pg_ctl" -D "$DATA" -l "$TMP/server.log" -w -o "\
	-c wal_level=logical -c port=$PORT -c listen_addresses=127.0.0.1 \
	-c unix_socket_directories=$TMP -c max_wal_senders=4 -c max_replication_slots=8 \
	-c timezone=UTC -c datestyle=ISO,MDY -c extra_float_digits=1" start >/dev/null
STARTED=1

CONN="host=127.0.0.1 port=$PORT user=postgres dbname=postgres"

psql_run() {
	psql -X -q -v ON_ERROR_STOP=1 -d "$CONN" "$@" >/dev/null
}

create_slot() {
	psql_run -c "SELECT pg_create_logical_replication_slot('$1', 'pgoutput')"
}

drop_slot() {
	psql_run -c "SELECT pg_drop_replication_slot('$1')"
}

# capture NAME SLOT CONNINFO [capture_pgoutput options]: writes NAME.bin.
capture() {
	local name=$1 slot=$2 conninfo=$3
	shift 3
	"$CAPTURE" -d "$conninfo" -s "$slot" -o "$FIXTURES/$name.bin" -t 3 "$@"
}

psql_run -c "CREATE PUBLICATION p FOR ALL TABLES"

create_slot basic
psql_run -f "$SQL/basic.sql"
capture basic basic "$CONN"
drop_slot basic

create_slot toast
psql_run -f "$SQL/toast.sql"
capture toast toast "$CONN"
drop_slot toast

create_slot types_text
create_slot types_binary
psql_run -f "$SQL/types.sql"
capture types types_text "$CONN"
capture types_binary types_binary "$CONN" -b
drop_slot types_text
drop_slot types_binary

create_slot stream
psql_run -f "$SQL/stream.sql"
capture stream stream "$CONN options='-c logical_decoding_work_mem=64kB'" -S
drop_slot stream
