#!/usr/bin/env bash
#
# tests/demo.sh: tidemark's live demo, the first command of the README.
#
# Installs what is missing (Debian, as root), builds, starts a throwaway
# source and target PostgreSQL on loopback, and replicates a small shop
# while an application (pgbench) writes to it: orders placed, paid,
# shipped and cancelled; halfway, a deployment changes the schema (a
# money column becomes numeric, a column is added, one renamed, a table
# created). It ends with a side-by-side check of every table and removes
# the servers.
#
#   ./tests/demo.sh [SECONDS]     (how long the application writes; default 15)

set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
ROOT=$PWD
DURATION=${1:-15}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
. "$ROOT/tests/tools/deps.sh"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "dependencies"
install_dependencies

say "build"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$ROOT/build" --parallel "$(nproc)" >/dev/null
TIDEMARK=$ROOT/build/tidemark
echo "built $TIDEMARK"

DEMO_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tidemark-demo.XXXXXX")
chmod 755 "$DEMO_DIR"
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	"$ROOT/tests/tools/pgcluster" stop "$DEMO_DIR" --name source >/dev/null 2>&1 || true
	"$ROOT/tests/tools/pgcluster" stop "$DEMO_DIR" --name target >/dev/null 2>&1 || true
	rm -rf "$DEMO_DIR"
}
trap cleanup EXIT

say "throwaway servers"
SRC_PORT=$("$ROOT/tests/tools/pgcluster" start "$DEMO_DIR" --name source --owner-pid $$)
TGT_PORT=$("$ROOT/tests/tools/pgcluster" start "$DEMO_DIR" --name target --owner-pid $$)
export TIDEMARK_SOURCE="host=127.0.0.1 port=$SRC_PORT dbname=postgres user=postgres"
export TIDEMARK_TARGET="host=127.0.0.1 port=$TGT_PORT dbname=postgres user=postgres"
export PGTZ=UTC
echo "source on port $SRC_PORT, target on port $TGT_PORT (wal_level=logical)"

src() { psql -X -q -v ON_ERROR_STOP=1 "$TIDEMARK_SOURCE" "$@"; }
tgt() { psql -X -q -v ON_ERROR_STOP=1 "$TIDEMARK_TARGET" "$@"; }

say "the shop: 2,000 customers, 500 products, 30,000 orders with 90,000 lines"
src -f "$ROOT/tests/demo/shop_schema.sql"

say "tidemark setup --schema shop"
"$TIDEMARK" setup --schema shop

say "tidemark run, while the application writes for $DURATION seconds"
"$TIDEMARK" run --progress-interval 3 >"$DEMO_DIR/run.log" 2>&1 &
PIDS+=($!)
tail -n +1 -f "$DEMO_DIR/run.log" &
PIDS+=($!)
"$PGBIN/pgbench" -n -c 2 -T "$DURATION" -f "$ROOT/tests/demo/shop_workload.sql" \
	"$TIDEMARK_SOURCE" >"$DEMO_DIR/pgbench.log" 2>&1 &
BENCH=$!
sleep $((DURATION / 2))
echo "-- a deployment, while orders keep coming:"
echo "--   orders.total integer -> numeric(12,2), a new column, a rename, a new table"
src -c "ALTER TABLE shop.orders ALTER COLUMN total TYPE numeric(12,2)"
src -c "ALTER TABLE shop.orders ADD COLUMN currency text NOT NULL DEFAULT 'EUR'"
src -c "ALTER TABLE shop.customers RENAME COLUMN email TO email_address"
src -c "UPDATE shop.orders SET total = total + 0.99 WHERE id % 1000 = 0"
src -c "CREATE TABLE shop.reviews (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          sku text NOT NULL, stars smallint, body text);
        INSERT INTO shop.reviews (sku, stars, body)
        SELECT 'SKU-' || g, 1 + g % 5, 'review ' || g FROM generate_series(1, 300) g"
wait "$BENCH"
grep -E '^(number of transactions actually processed|tps)' "$DEMO_DIR/pgbench.log" | sed 's/^/-- pgbench: /'

say "tidemark status"
"$TIDEMARK" status

say "tidemark schema shop.orders"
"$TIDEMARK" schema shop.orders

say "tidemark ddl-log (what the deployment did, and what tidemark did about it)"
"$TIDEMARK" ddl-log | grep -E '^[0-9A-F]+/|statement:|on the target:' | grep -v 'rewrote' | head -n 24

say "stop (SIGTERM), then run --until-caught-up"
kill -TERM "${PIDS[0]}"
wait "${PIDS[0]}" || { echo "tidemark run did not stop cleanly" >&2; exit 1; }
"$TIDEMARK" run --until-caught-up 2>&1 | tail -n 2
kill "${PIDS[1]}" 2>/dev/null || true

say "side-by-side check"
CHECK="SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))"
printf '%-22s %10s %10s  %-32s %s\n' table source target checksum result
status=0
for table in shop.customers shop.products shop.orders 'shop."Line Items"' shop.reviews; do
	read -r sc ssum < <(src -At -F ' ' -c "$CHECK FROM $table t")
	read -r tc tsum < <(tgt -At -F ' ' -c "$CHECK FROM $table t")
	if [ "$sc" = "$tc" ] && [ "$ssum" = "$tsum" ]; then
		result=equal
	else
		result=DIFFERENT
		status=1
	fi
	printf '%-22s %10s %10s  %-32s %s\n' "$table" "$sc" "$tc" "$ssum" "$result"
done
echo "compared every row of every table as text: count and md5 of the rows in order"
tgt -c "SELECT format_type(atttypid, atttypmod) AS \"target shop.orders.total\" FROM pg_attribute
        WHERE attrelid = 'shop.orders'::regclass AND attname = 'total'"
[ $status -eq 0 ] && say "the target equals the source" || say "DIFFERENCES FOUND"
exit $status
