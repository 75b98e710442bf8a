#!/usr/bin/env bash
#
# tests/fuzz/run-long.sh: a long fuzzing run, to leave going for hours.
#
#   tests/fuzz/run-long.sh [SECONDS] [-j JOBS] [-o FINDINGS] [HARNESS...]
#
# Runs each harness for SECONDS (default 3600), JOBS at a time (default: the
# core count), with tests/fuzz/fuzz.sh: build-fuzz/ is built, the seeds are
# made, and the corpus each harness grows is kept in
# build-fuzz/fuzz/corpus/<harness>/, so that the next run starts where this
# one ended. A finding does not stop a harness: findings (crashes, leaks,
# timeouts, out-of-memory inputs) go to FINDINGS/<harness>/ (default
# fuzz-findings/ at the top of the tree) and the run goes on. Replay one
# with build-fuzz/tests/fuzz/<harness> FILE. Exits 1 when there are any.
set -uo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
SECS=3600
case ${1:-} in
[0-9]*) SECS=$1; shift ;;
-h | --help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
exec "$ROOT/tests/fuzz/fuzz.sh" -t "$SECS" -k -o "$ROOT/fuzz-findings" "$@"
