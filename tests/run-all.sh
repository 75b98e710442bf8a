#!/usr/bin/env bash
#
# tests/run-all.sh: tidemark's whole test suite, the command CI runs.
#
#   ./tests/run-all.sh [--quick] [-- CTEST-ARGS...]
#
# 1. Installs the build and test dependencies that are missing (Debian; as
#    root with apt-get, otherwise it says what to install).
# 2. Builds build/ (gcc) and build-asan/ (clang, AddressSanitizer and
#    UndefinedBehaviorSanitizer).
# 3. Runs the unit tests (ctest) in build/, and the unit and integration
#    tests in build-asan/: each integration test runs once, under the
#    sanitizers (the servers' work, most of a test's time, is the same in
#    both builds).
# 4. Runs the unit tests of build/ under valgrind (memory errors, definite
#    leaks).
# 5. Builds build-fuzz/ (clang, libFuzzer) and fuzzes each harness of
#    tests/fuzz/ for FUZZ_SECONDS (default 6) on its seeds: any crash, leak,
#    timeout or sanitizer report fails the step (skipped, not failed, when
#    clang's libFuzzer runtime is missing).
# 6. Builds the newer PostgreSQL whose source lies beside the project
#    (tests/tools/newer_pg.sh: ../shared/pg/, or $TIDEMARK_PG_SOURCE) into
#    build/pg-newer/ once (in the background from step 2 on, on the CPU
#    the other steps leave), and runs the integration tests labelled "newer"
#    of build/ with source and target servers of that version, then four
#    of them again with one apply connection (skipped, not failed, when no
#    such source is there).
#
# --quick: build/ and its unit and integration tests only. CTEST-ARGS go
# to every ctest run, e.g. -- -R harness. JOBS sets the parallelism
# (default: the core count).
# Exits non-zero if any step fails; works from any directory.

set -uo pipefail

cd "$(dirname "$(readlink -f "$0")")/.." || exit 1
ROOT=$PWD
# shellcheck source=tools/deps.sh
. "$ROOT/tests/tools/deps.sh"

# Installed without recommended packages, so what gcc and clang only
# recommend (the C library headers, clang's sanitizer runtime) is named.
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
LABELS='^(unit|integration)$'
QUICK=0
CTEST_ARGS=()

while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--) shift; CTEST_ARGS=("$@"); break ;;
	-h | --help) sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-all: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

STEPS=()         # "name status seconds note" per step, for the summary
FAILED=()
STEP_LOGS=$(mktemp -d)  # each step's output (why_failed)
trap '[ -z "${NEWER_PID:-}" ] || stop_newer_build; rm -rf "$STEP_LOGS"' EXIT

section() {
	printf '\n==== %s ====\n' "$*"
}

# step NAME COMMAND...: runs a step, records its outcome and duration.
step() {
	local name=$1 start rc
	shift
	section "$name"
	start=$SECONDS
	"$@" 2>&1 | tee "$STEP_LOGS/$name.log"
	rc=${PIPESTATUS[0]}
	record "$name" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" $((SECONDS - start))
	return $rc
}

record() {
	STEPS+=("$(printf '  %-4s  %-12s %4ss  %s' "$2" "$1" "$3" "${4:-}")")
	[ "$2" = PASS ] || FAILED+=("$1")
}

# ---- dependencies -------------------------------------------------------


# ---- building and testing ---------------------------------------------------

build() {
	local dir=$1
	shift
	cmake -S "$ROOT" -B "$ROOT/$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" &&
		cmake --build "$ROOT/$dir" --parallel "$JOBS"
}

# run_ctest DIR [LABELS]: the tests of DIR whose label matches LABELS
# (default: unit and integration tests).
run_ctest() {
	ctest --test-dir "$ROOT/$1" --output-on-failure --parallel "$JOBS" -L "${2:-$LABELS}" \
		"${CTEST_ARGS[@]+"${CTEST_ARGS[@]}"}"
}

# The normal build's unit tests; with --quick, its integration tests too.
run_ctest_normal() {
	if [ $QUICK -eq 1 ]; then
		run_ctest "$1"
	else
		run_ctest "$1" '^unit$'
	fi
}

# The sanitizer build runs every test. The integration tests run here only
# (not in build/ too): their time is mostly the servers', the same in both
# builds, and running them twice took a quarter of the suite. The normal
# build meets real servers in the newer PostgreSQL's tests (newer_step),
# the demo, and the benchmarks.
run_ctest_sanitized() {
	ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		run_ctest "$1"
}

# Runs each unit test binary of build/ under valgrind, JOBS at a time.
run_valgrind() {
	local dir=$ROOT/build/valgrind src name failed=0 n=0
	rm -rf "$dir" && mkdir -p "$dir"
	for src in "$ROOT"/tests/unit/test_*.c; do
		[ -e "$src" ] || continue
		name=$(basename "$src" .c)
		(
			valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
				"$ROOT/build/tests/$name" >"$dir/$name.log" 2>&1
			echo $? >"$dir/$name.rc"
		) &
		n=$((n + 1))
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
			wait -n
		done
	done
	wait
	for src in "$ROOT"/tests/unit/test_*.c; do
		[ -e "$src" ] || continue
		name=$(basename "$src" .c)
		if [ "$(cat "$dir/$name.rc")" = 0 ]; then
			echo "valgrind $name: ok"
		else
			echo "valgrind $name: FAILED (exit $(cat "$dir/$name.rc")); its log:"
			sed 's/^/    /' "$dir/$name.log"
			failed=1
		fi
	done
	echo "valgrind: $n unit test binaries checked"
	return $failed
}

# Short runs of the fuzz harnesses (tests/fuzz/fuzz.sh), on a fresh corpus.
fuzz_step() {
	if ! "$ROOT/tests/fuzz/fuzz.sh" --check; then
		section fuzz
		echo "fuzz: clang's libFuzzer runtime (libclang-rt-14-dev) is missing: skipped"
		record fuzz PASS 0 "skipped: no libFuzzer runtime"
		return 0
	fi
	step fuzz "$ROOT/tests/fuzz/fuzz.sh" -t "${FUZZ_SECONDS:-6}" -j "$JOBS" --fresh
}

# The newer PostgreSQL (see tests/tools/newer_pg.sh) is built from the
# start, in the background and in the idle scheduling class (nice 19 where
# that is refused): it takes only the CPU the other steps leave, which the
# integration tests do while they wait on their servers, and newer_step
# waits for what is left of it. A session of its own, so that it is
# stopped as a whole (stop_newer_build) if run-all ends first (setsid -w:
# its status is the build's, should setsid have to fork).
NEWER_TARBALL=
NEWER_PID=

start_newer_build() {
	local low=(chrt --idle 0)
	NEWER_TARBALL=$("$ROOT/tests/tools/newer_pg.sh" --find)
	[ -n "$NEWER_TARBALL" ] || return 0
	chrt --idle 0 true 2>/dev/null || low=(nice -n 19)
	setsid -w "${low[@]}" "$ROOT/tests/tools/newer_pg.sh" "$NEWER_TARBALL" "$ROOT/build/pg-newer" \
		>"$STEP_LOGS/newer.bin" 2>"$STEP_LOGS/newer.err" </dev/null &
	NEWER_PID=$!
}

stop_newer_build() {
	[ -n "$NEWER_PID" ] || return 0
	kill -- -"$NEWER_PID" 2>/dev/null || true
	wait "$NEWER_PID" 2>/dev/null || true
	NEWER_PID=
}

# The integration tests where major versions differ, against the newer
# PostgreSQL.
newer_step() {
	local bin start rc
	if [ -z "$NEWER_TARBALL" ]; then
		section "newer postgres"
		echo "newer postgres: no newer PostgreSQL source beside the project: skipped"
		record newer-pg PASS 0 "skipped: no source"
		return 0
	fi
	section "newer postgres: $(basename "$NEWER_TARBALL") (built once, in the background; kept in build/pg-newer)"
	start=$SECONDS
	wait "$NEWER_PID"
	rc=$?
	NEWER_PID=
	cat "$STEP_LOGS/newer.err"
	bin=$(cat "$STEP_LOGS/newer.bin")
	if [ $rc -ne 0 ] || [ -z "$bin" ]; then
		record newer-pg FAIL $((SECONDS - start)) "the build failed"
		return 1
	fi
	echo "servers from $bin: $("$bin/postgres" --version)"
	record newer-pg PASS $((SECONDS - start)) "waited for its build"
	step test-newer run_ctest_newer "$bin"
}

# run_ctest_newer BIN: the tests labelled newer, servers from BIN, as
# every other step runs them (through the default two apply workers); then
# those of them that apply the most kinds of rows again with one apply
# connection (a config file: TIDEMARK_CONFIG), so that this path meets
# the newer server too.
run_ctest_newer() {
	PGBIN=$1 ctest --test-dir "$ROOT/build" --output-on-failure --parallel "$JOBS" \
		-L '^newer$' "${CTEST_ARGS[@]+"${CTEST_ARGS[@]}"}" || return 1
	printf 'apply-workers = 1;\n' >"$ROOT/build/one-apply-connection.conf"
	TIDEMARK_CONFIG=$ROOT/build/one-apply-connection.conf PGBIN=$1 \
		ctest --test-dir "$ROOT/build" --output-on-failure --parallel "$JOBS" \
		-R '/test_(stream|fidelity|types|partition)$' "${CTEST_ARGS[@]+"${CTEST_ARGS[@]}"}"
}

versions() {
	echo "gcc:      $(gcc -dumpfullversion 2>/dev/null || echo none)"
	echo "clang:    $(clang -dumpversion 2>/dev/null || echo none)"
	echo "cmake:    $(cmake --version 2>/dev/null | head -n 1)"
	echo "postgres: $(/usr/lib/postgresql/15/bin/postgres --version 2>/dev/null || echo none)"
	echo "valgrind: $(valgrind --version 2>/dev/null || echo none)"
	echo "jobs:     $JOBS; user: $(id -un)"
}

# ---- main -----------------------------------------------------------------------

# What a failed step's output said of its failure, for the end of the log
# (where a long output is cut, the summary is what stays).
why_failed() {
	local name
	for name in "${FAILED[@]}"; do
		[ -f "$STEP_LOGS/$name.log" ] || continue
		echo "$name failed:"
		grep -E 'FOUND|ERROR|SUMMARY: |runtime error|\*\*\*Failed|[Ff]ailed|FAILED|[Ee]rror:|out-of-memory|timeout' \
			"$STEP_LOGS/$name.log" | grep -v '^100% tests passed' | tail -n 12 | cut -c1-200 |
			sed 's/^/    /'
	done
}

summary() {
	local line
	section "summary"
	why_failed
	for line in "${STEPS[@]}"; do
		echo "$line"
	done
	if [ ${#FAILED[@]} -eq 0 ]; then
		printf 'run-all: all steps succeeded in %dm%02ds\n' $((SECONDS / 60)) $((SECONDS % 60))
	else
		printf 'run-all: FAILED (%s) after %dm%02ds\n' "${FAILED[*]}" $((SECONDS / 60)) $((SECONDS % 60))
	fi
}

# build_and_test DIR SUFFIX TEST-FUNCTION CMAKE-ARGS...: the test step runs
# only if the build succeeded.
build_and_test() {
	local dir=$1 suffix=$2 test=$3
	shift 3
	if step "build$suffix" build "$dir" "$@"; then
		step "test$suffix" "$test" "$dir"
	else
		record "test$suffix" FAIL 0 "not run: the build failed"
	fi
}

main() {
	step dependencies install_dependencies || { summary; exit 1; }
	section "versions"
	versions
	[ $QUICK -eq 1 ] || start_newer_build
	build_and_test build "" run_ctest_normal
	if [ $QUICK -eq 0 ]; then
		build_and_test build-asan -asan run_ctest_sanitized \
			-DTIDEMARK_SANITIZE=ON -DCMAKE_C_COMPILER=clang
		if [[ " ${FAILED[*]} " == *" build "* ]]; then
			record valgrind FAIL 0 "not run: the build failed"
		else
			step valgrind run_valgrind
		fi
		fuzz_step
		if [[ " ${FAILED[*]} " == *" build "* ]]; then
			record test-newer FAIL 0 "not run: the build failed"
		else
			newer_step
		fi
	fi
	summary
	[ ${#FAILED[@]} -eq 0 ]
}

main
