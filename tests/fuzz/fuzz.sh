#!/usr/bin/env bash
#
# tests/fuzz/fuzz.sh: builds the libFuzzer harnesses and runs them.
#
#   tests/fuzz/fuzz.sh [-t SECONDS] [-j JOBS] [-o FINDINGS] [-B BUILD] [-k] [--fresh] [HARNESS...]
#   tests/fuzz/fuzz.sh --check
#
# Builds BUILD (default build-fuzz/, clang, -DTIDEMARK_FUZZ=ON), makes the
# seed corpora (make_corpus.sh), and runs each harness (default: all of
# tests/fuzz/fuzz_*.c; a name is fuzz_pgoutput or pgoutput) for SECONDS
# (default 8), JOBS at a time (default: the core count), on its seeds.
# Inputs that find new paths go to BUILD/fuzz/corpus/<harness>/, kept from
# run to run (--fresh empties it, and FINDINGS, first); crashes, leaks,
# timeouts and out-of-memory inputs to FINDINGS/<harness>/ (default
# BUILD/fuzz/findings), each run's log to BUILD/fuzz/logs/<harness>.log. A
# harness stops at its first finding, unless -k (keep going: libFuzzer's
# fork mode).
#
# Exits 1 when FINDINGS holds a finding of a harness run (its log's end is
# printed), 2 on a usage or build error, 3 (also for --check) when clang or
# its libFuzzer runtime (libclang-rt-14-dev) is missing.
set -uo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
SECONDS_EACH=8
JOBS=$(nproc 2>/dev/null || echo 2)
BUILD=$ROOT/build-fuzz
FINDINGS=
FRESH=0
KEEP_GOING=()
HARNESSES=()

usage() {
	sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

# Whether clang links a libFuzzer program.
have_libfuzzer() {
	command -v clang >/dev/null &&
		printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' |
		clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1
}

# Inputs longer than the harness needs only slow it down.
max_len() {
	case $1 in
	fuzz_pgoutput | fuzz_ddl_parse) echo 16384 ;;
	fuzz_ddl_event) echo 8192 ;;
	fuzz_snap_chunk) echo 4096 ;;
	*) echo 1024 ;;
	esac
}

build() {
	CC=clang cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIDEMARK_FUZZ=ON \
		-DTIDEMARK_TESTS=OFF >"$BUILD/configure.log" 2>&1 ||
		{ cat "$BUILD/configure.log"; return 1; }
	cmake --build "$BUILD" --target fuzzers --parallel "$JOBS"
}

# run_one HARNESS: SECONDS of fuzzing; its status in logs/HARNESS.rc.
run_one() {
	local h=$1 corpus=$BUILD/fuzz/corpus/$1 found=$FINDINGS/$1 log=$BUILD/fuzz/logs/$1.log rc

	mkdir -p "$corpus" "$found"
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$BUILD/tests/fuzz/$h" -max_total_time="$SECONDS_EACH" -rss_limit_mb=1024 -timeout=10 \
		-max_len="$(max_len "$h")" -print_final_stats=1 -artifact_prefix="$found/" \
		"${KEEP_GOING[@]+"${KEEP_GOING[@]}"}" "$corpus" "$BUILD/fuzz/seeds/$h" >"$log" 2>&1
	rc=$?
	# a report that did not end the run, or a finding kept going past, counts
	if [ $rc -eq 0 ] && { grep -qE '^(==[0-9]+==ERROR|SUMMARY: |.*runtime error:)' "$log" ||
		[ -n "$(ls -A "$found")" ]; }; then
		rc=1
	fi
	echo $rc >"$BUILD/fuzz/logs/$h.rc"
}

report() {
	local h failed=0

	for h in "${HARNESSES[@]}"; do
		if [ "$(cat "$BUILD/fuzz/logs/$h.rc")" = 0 ]; then
			echo "fuzz $h: ok, $(grep -oE '^#[0-9]+' "$BUILD/fuzz/logs/$h.log" | tail -n 1 |
				tr -d '#') runs in ${SECONDS_EACH}s"
		else
			echo "fuzz $h: FOUND something (exit $(cat "$BUILD/fuzz/logs/$h.rc")); inputs in $FINDINGS/$h/; its log ends:"
			tail -n 40 "$BUILD/fuzz/logs/$h.log" | sed 's/^/    /'
			failed=1
		fi
	done
	return $failed
}

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		-t) SECONDS_EACH=$2; shift ;;
		-j) JOBS=$2; shift ;;
		-o) FINDINGS=$2; shift ;;
		-B) BUILD=$2; shift ;;
		--fresh) FRESH=1 ;;
		-k) KEEP_GOING=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1) ;;
		--check) have_libfuzzer; exit $(($? == 0 ? 0 : 3)) ;;
		-h | --help) usage 0 ;;
		-*) echo "fuzz.sh: unknown option $1" >&2; usage ;;
		*) HARNESSES+=("fuzz_${1#fuzz_}") ;;
		esac
		shift
	done
}

main() {
	local h

	parse_args "$@"
	BUILD=$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)
	FINDINGS=${FINDINGS:-$BUILD/fuzz/findings}
	if [ ${#HARNESSES[@]} -eq 0 ]; then
		for h in "$ROOT"/tests/fuzz/fuzz_*.c; do
			h=$(basename "$h" .c)
			[ "$h" = fuzz_seeds ] || HARNESSES+=("$h")
		done
	fi
	have_libfuzzer || { echo "fuzz.sh: clang's libFuzzer runtime is missing" >&2; exit 3; }
	build || exit 2
	for h in "${HARNESSES[@]}"; do
		[ -x "$BUILD/tests/fuzz/$h" ] || { echo "fuzz.sh: no harness $h" >&2; exit 2; }
	done
	"$ROOT/tests/fuzz/make_corpus.sh" "$BUILD" || exit 2
	[ $FRESH -eq 0 ] || rm -rf "$BUILD/fuzz/corpus" "$FINDINGS"
	mkdir -p "$BUILD/fuzz/logs"
	echo "fuzz: ${#HARNESSES[@]} harnesses, ${SECONDS_EACH}s each, $JOBS at a time"
	for h in "${HARNESSES[@]}"; do
		run_one "$h" &
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
			wait -n
		done
	done
	wait
	report || exit 1
}

main "$@"
