#!/bin/bash
# check_cast_matrix.sh: checks the casting matrix in fixtures/cast/ against
# a real PostgreSQL 15 server. Not run by the test suite (it needs a
# server); run it after changing src/cast/cast*.c or the fixtures:
#
#   tests/tools/check_cast_matrix.sh [BUILD_DIR]
#
# BUILD_DIR (default: build) is a configured CMake build directory; the
# cast_using tool (the USING clauses of cast_alter_using) is built there
# first. It starts a throwaway cluster with tests/tools/pgcluster (run as root,
# the server runs as the postgres user), and stops and removes it when
# done. Environment: PGBIN (default /usr/lib/postgresql/15/bin).
#
# What it checks (sessions use extra_float_digits 3, DateStyle ISO,
# IntervalStyle postgres, bytea_output hex, UTF8):
#   fits.txt     each value is inserted into a column of the type. yes: the
#                insert succeeds and the stored value equals the text, in
#                the type's terms (numbers as numeric, character(n) as
#                bpchar, times as instants and fractions, under TimeZone
#                Asia/Kathmandu); no: the insert fails or the value changes;
#                strict: the insert succeeds (tidemark refuses on purpose).
#   classify.txt sample values of `from` (below) are converted with
#                ALTER COLUMN c and the clause cast_alter_using writes, then
#                cast back. Every clause must be valid SQL (no error of
#                class 42). SAME, WIDEN: the ALTER succeeds and every value
#                comes back as it was; NARROW: some value does not, or the
#                ALTER fails (when no sample shows it, a warning: the
#                cautious calls, such as unknown types -> text, or time ->
#                timetz whose loss depends on the day the ALTER runs);
#                INCOMPATIBLE: no further check. Under TimeZone
#                Europe/Paris, so that DST shows.
#   common.txt   samples of a and of b come back unchanged from the common
#                type.
# Lines whose types the server does not have (public.vec, numeric(0,0))
# are reported as skipped.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIX=$ROOT/fixtures/cast
BUILD_DIR=$(cd "${1:-$ROOT/build}" && pwd)
CAST_USING=$BUILD_DIR/tests/tools/cast_using
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
WORK=$(mktemp -d /tmp/check_cast.XXXXXX)
chmod 755 "$WORK"
SQL=$WORK/check.sql
OUT=$WORK/check.out

cleanup() {
	"$ROOT/tests/tools/pgcluster" stop "$WORK" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

cmake --build "$BUILD_DIR" --target cast_using >/dev/null

PORT=$("$ROOT/tests/tools/pgcluster" start "$WORK" --owner-pid $$)

# A SQL string literal.
lit() {
	local s=${1//\'/\'\'}
	printf "'%s'" "$s"
}

# The sample values of a type (without array brackets), as SQL literals.
samples() {
	local t=$1 p s
	case $t in
	smallint) echo "'-32768','0','32767'" ;;
	integer | int4) echo "'-2147483648','42','2147483647','16777217'" ;;
	bigint | pg_catalog.int8) echo "'-9223372036854775808','9223372036854775807','9007199254740993'" ;;
	numeric)
		echo "'123456789012345678901234567890.123456789','1e120','1e-20','NaN','Infinity','-Infinity','1.5'" ;;
	numeric\(*)
		p=${t#numeric(}; p=${p%)}; s=0
		[[ $p == *,* ]] && s=${p#*,} && p=${p%,*}
		local max
		max=$(numeric_max "$p" "$s")
		echo "'$max','-$max','0','NaN','1.5','0.001'" ;;
	real | float4) echo "'0.1','3.4028235e+38','-1.1754944e-38','1e-45','NaN','-Infinity','16777216','0.33333334'" ;;
	'double precision') echo "'0.1','1.7976931348623157e+308','5e-324','NaN','Infinity','0.30000000000000004'" ;;
	text | varchar | 'character varying'*)
		echo "'héllo wörld','','trailing  ','a''b\"c','42','abcdefghij',' x','abcde'" ;;
	bpchar | character*) echo "'ab','abc','abcde','abcdefghij','abcdefghijk',''" ;;
	boolean | bool) echo "'true','false'" ;;
	date) echo "'2024-02-29','0044-03-15 BC','infinity','-infinity','1999-12-31'" ;;
	timestamp | 'timestamp without time zone' | timestamp\(*\)' without time zone')
		echo "'2024-02-29 12:34:56.123456','2024-10-27 02:30:00','0044-03-15 12:00:00 BC','infinity'" ;;
	timestamptz | *'with time zone' | timestamptz\(*)
		if [[ $t == time\ * || $t == time\(* ]]; then
			echo "'12:34:56.123456+02','23:00:00-05'"
		else
			echo "'2024-02-29 12:34:56.123456+05:30','2024-10-27 00:30:00+00','2024-10-27 01:30:00+00','infinity'"
		fi ;;
	time*) echo "'12:34:56.123456','00:00:00','23:59:59.999999'" ;;
	interval*) echo "'1 year 2 mons 3 days 04:05:06.789','-1 days','00:00:00.123456'" ;;
	uuid) echo "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'" ;;
	json) echo "'{\"b\": 1, \"a\": 2}','[1, 2.50, \"x\"]','{\"a\":1,\"a\":2}'" ;;
	jsonb) echo "'{\"b\": 1, \"a\": 2}','[1, 2.50]','null'" ;;
	bytea) echo "'\\xdeadbeef','\\x'" ;;
	inet) echo "'10.0.0.1','10.0.0.1/8','::1'" ;;
	cidr) echo "'10.0.0.0/8','::1/128'" ;;
	bit*) echo "'101','1','10101','1010101'" ;;
	xml) echo "'<a>1</a>','text'" ;;
	macaddr) echo "'08:00:2b:01:02:03'" ;;
	money) echo "'\$1.00','-\$2.50'" ;;
	public.mood) echo "'sad','happy'" ;;
	public.color) echo "'red','green'" ;;
	'"My Type"') echo "'x','y'" ;;
	other.integer) echo "'5000000000'" ;;
	*) echo "" ;;
	esac
}

# n copies of a character.
rep() {
	local n=$1 c=$2
	((n > 0)) && printf "%${n}s" "" | tr ' ' "$c"
	return 0
}

# The largest value of numeric(p,s), PostgreSQL 15 scales included.
numeric_max() {
	local p=$1 s=$2
	if ((s <= 0)); then
		echo "$(rep "$p" 9)$(rep $((-s)) 0)"
	elif ((s >= p)); then
		echo "0.$(rep $((s - p)) 0)$(rep "$p" 9)"
	else
		echo "$(rep $((p - s)) 9).$(rep "$s" 9)"
	fi
}

# The comparison, over c (stored) and $v (the text), that says a value was
# kept, for fits.txt.
comparison() {
	local t=$1 arr=
	[[ $t == *'[]' ]] && arr='[]' && t=${t%'[]'}
	local frac="(substring(\$v from '\\.(\\d+)') IS NULL OR rtrim(substring(\$v from '\\.(\\d+)'), '0') = rtrim(coalesce(substring(c::text from '\\.(\\d+)'), ''), '0'))"
	case $t in
	smallint | integer | bigint | numeric* | real | 'double precision')
		echo "c::text::numeric$arr = \$v::numeric$arr" ;;
	text | 'character varying'* | bit*) echo "c::text$arr = \$v::text$arr" ;;
	bpchar | character*) echo "c::text::bpchar$arr = \$v::bpchar$arr" ;;
	date) echo "c::text = \$v ;; c::timestamptz = \$v::timestamptz" ;;
	timestamp*'with time zone') echo "c = \$v::timestamptz AND $frac" ;;
	timestamp*) echo "c::timestamptz = \$v::timestamptz AND $frac" ;;
	time*'without time zone') echo "c::timetz = \$v::timetz AND $frac" ;;
	time*'with time zone') echo "c = \$v::timetz AND $frac" ;;
	*) echo "true" ;;
	esac
}

cat >"$SQL" <<'EOF'
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET extra_float_digits = 3;
SET DateStyle = 'ISO, MDY';
SET IntervalStyle = postgres;
SET bytea_output = hex;
SET client_encoding = 'UTF8';
CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE public.color AS ENUM ('red', 'green');
CREATE TYPE public."My Type" AS ENUM ('x', 'y');
CREATE SCHEMA other;
CREATE DOMAIN other."integer" AS bigint;

-- Whether val goes into a column of type typ (else "refused") and stays
-- as cmp says ("kept", else "changed"); cmp may list alternatives
-- separated by " ;; ", tried one by one (an error in one is a no).
CREATE FUNCTION pg_temp.fit(typ text, val text, cmp text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	ok boolean;
	alt text;
BEGIN
	BEGIN
		EXECUTE format('CREATE TEMP TABLE fit_t (c %s)', typ);
	EXCEPTION WHEN others THEN
		RETURN 'skipped: ' || SQLERRM;
	END;
	BEGIN
		EXECUTE format('INSERT INTO fit_t VALUES (%L)', val);
	EXCEPTION WHEN others THEN
		DROP TABLE fit_t;
		RETURN 'refused: ' || SQLERRM;
	END;
	FOREACH alt IN ARRAY string_to_array(cmp, ' ;; ') LOOP
		BEGIN
			EXECUTE format('SELECT %s FROM fit_t', replace(alt, '$v', quote_literal(val))) INTO ok;
		EXCEPTION WHEN others THEN
			ok := false;
		END;
		EXIT WHEN ok;
	END LOOP;
	DROP TABLE fit_t;
	RETURN CASE WHEN ok THEN 'kept' ELSE 'changed' END;
END $f$;

CREATE FUNCTION pg_temp.quote_elem(e text) RETURNS text
LANGUAGE sql AS $f$ SELECT '"' || replace(replace(e, '\', '\\'), '"', '\"') || '"' $f$;

-- Sample arrays: each sample alone, all together, two dimensions, empty, NULL.
CREATE FUNCTION pg_temp.array_samples(elems text[]) RETURNS text[]
LANGUAGE sql AS $f$
	SELECT array_agg(x) FROM (
		SELECT '{' || pg_temp.quote_elem(e) || '}' AS x FROM unnest(elems) e
		UNION ALL SELECT '{' || string_agg(pg_temp.quote_elem(e), ',') || '}' FROM unnest(elems) e
		UNION ALL SELECT '{{' || pg_temp.quote_elem(elems[1]) || '},{' ||
			pg_temp.quote_elem(elems[array_length(elems, 1)]) || '}}'
		UNION ALL SELECT '{}' UNION ALL SELECT '{NULL}') s $f$;

-- Converts the samples that are values of src with ALTER COLUMN c
-- (clause), and back to src.
CREATE FUNCTION pg_temp.convert(src text, dst text, clause text, samples text[]) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	s text;
	stored int := 0;
	changed int;
BEGIN
	BEGIN
		EXECUTE format('CREATE TEMP TABLE conv_t (old %s, c %s)', src, src);
		EXECUTE format('SELECT NULL::%s', dst);
	EXCEPTION WHEN others THEN
		RETURN 'skipped: ' || SQLERRM;
	END;
	FOREACH s IN ARRAY samples LOOP
		BEGIN
			EXECUTE format('INSERT INTO conv_t VALUES (%L, %L)', s, s);
			stored := stored + 1;
		EXCEPTION WHEN others THEN
			NULL; /* not a value of src */
		END;
	END LOOP;
	BEGIN
		EXECUTE 'ALTER TABLE conv_t ALTER COLUMN c ' || clause;
	EXCEPTION WHEN others THEN
		DROP TABLE conv_t;
		RETURN 'error ' || SQLSTATE || ': ' || SQLERRM;
	END;
	BEGIN
		EXECUTE format('SELECT count(*) FROM conv_t WHERE (c::%s)::text IS DISTINCT FROM old::text',
		               src) INTO changed;
	EXCEPTION WHEN others THEN
		DROP TABLE conv_t;
		RETURN 'changed: no way back: ' || SQLERRM;
	END;
	DROP TABLE conv_t;
	IF stored = 0 THEN
		RETURN 'empty';
	END IF;
	RETURN CASE WHEN changed = 0 THEN 'kept' ELSE 'changed ' || changed || '/' || stored END;
END $f$;
\set ON_ERROR_STOP 0
\pset format unaligned
\pset tuples_only on
EOF

# The samples of a type as a SQL array expression, arrays built from
# their element type's samples.
sample_array() {
	local t=$1
	if [[ $t == *'[]' ]]; then
		t=${t%'[]'}; t=${t%'[]'}
		echo "pg_temp.array_samples(ARRAY[$(samples "$t")]::text[])"
	else
		echo "ARRAY[$(samples "$t")]::text[]"
	fi
}

emit_convert() {
	local tag=$1 n=$2 expect=$3 src=$4 dst=$5 clause
	clause=$(echo "$src | $dst" | "$CAST_USING")
	if [[ $clause == ERROR* ]]; then
		echo "SELECT '$tag|$n|$expect|skipped: cast_alter_using refuses';" >>"$SQL"
		return
	fi
	echo "SELECT '$tag|$n|$expect|' || pg_temp.convert($(lit "$src"), $(lit "$dst"), $(lit "$clause"), $(sample_array "$src"));" >>"$SQL"
}

# Calls FN LINENO FIELD... for each line of a fixture file that is neither
# blank nor a comment, its fields split at " | ". For fits.txt the value
# is everything between the first and the last " | ", so there are three.
each_line() {
	local file=$1 fn=$2 n=0 line first rest
	while IFS= read -r line; do
		n=$((n + 1))
		[[ -z $line || $line == '#'* ]] && continue
		first=${line%% | *}
		rest=${line#* | }
		if [[ $file == fits.txt ]]; then
			"$fn" "$n" "$first" "${rest% | *}" "${line##* | }"
		else
			"$fn" "$n" "$first" "${rest%% | *}" "$(field3 "$rest")"
		fi
	done <"$FIX/$file"
}

# The third field of "b | c [| d]" minus its first.
field3() {
	local rest=${1#* | }
	echo "${rest%% | *}"
}

fits_line() { # n type value expect
	echo "SELECT 'F|$1|$4|' || pg_temp.fit($(lit "$2"), $(lit "$3"), $(lit "$(comparison "$2")"));" >>"$SQL"
}

classify_line() { # n from to kind
	emit_convert C "$1" "$4" "$2" "$3"
}

common_line() { # n a b common
	emit_convert M "$1" a "$2" "$4"
	emit_convert M "$1" b "$3" "$4"
}

echo "SET TimeZone = 'Asia/Kathmandu';" >>"$SQL"
each_line fits.txt fits_line
echo "SET TimeZone = 'Europe/Paris';" >>"$SQL"
each_line classify.txt classify_line
each_line common.txt common_line

psql -X -q -h "$WORK" -p "$PORT" -U postgres -d postgres -f "$SQL" >"$OUT" 2>&1

# Compares each result with what the fixture line expects.
awk -F'|' -v fix="$FIX" '
function bad(file, msg) { printf "FAIL %s:%s: %s\n", file, $2, msg; fails++ }
function warn(file, msg) { printf "warn %s:%s: %s\n", file, $2, msg; warns++ }
$1 == "F" {
	checked++
	if ($4 ~ /^skipped/) { skipped++; next }
	if ($3 == "yes" && $4 != "kept") bad("fits.txt", "expected to fit: " $4)
	else if ($3 == "no" && $4 == "kept") bad("fits.txt", "the server keeps this value")
	else if ($3 == "strict" && $4 ~ /^refused/) bad("fits.txt", "strict, but the server refuses: " $4)
	next
}
$1 == "C" {
	checked++
	if ($4 ~ /^skipped/) { skipped++; next }
	if ($4 ~ /^error 42/) bad("classify.txt", "the USING clause is not valid: " $4)
	else if ($4 == "empty") warn("classify.txt", "no sample is a value of the source type")
	else if (($3 == "WIDEN" || $3 == "SAME") && $4 != "kept") bad("classify.txt", $3 " but " $4)
	else if ($3 == "NARROW" && $4 == "kept") warn("classify.txt", "NARROW, but every sample is kept")
	next
}
$1 == "M" {
	checked++
	if ($4 ~ /^skipped/) { skipped++; next }
	if ($4 != "kept" && $4 != "empty") bad("common.txt", "values of " $3 " not held: " $4)
	next
}
/ERROR|FATAL/ { print "psql: " $0; fails++ }
END {
	printf "%d checks, %d failed, %d warnings, %d skipped\n", checked, fails, warns, skipped
	exit fails > 0
}' "$OUT"
