#!/usr/bin/env bash
#
# tests/fuzz/make_corpus.sh: the seed corpora of the fuzz harnesses.
#
#   tests/fuzz/make_corpus.sh BUILD_DIR [OUT_DIR]
#
# Cuts fixtures/ into seed inputs with BUILD_DIR's fuzz_seeds (built by the
# fuzzers target of a -DTIDEMARK_FUZZ=ON build), and adds the hand-written
# seeds of tests/fuzz/seeds/<harness>/. OUT_DIR (default BUILD_DIR/fuzz/seeds)
# gets a directory per harness; it is made afresh.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
BUILD=${1:?usage: make_corpus.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-$BUILD/fuzz/seeds}

rm -rf "$OUT"
mkdir -p "$OUT"
"$BUILD/tests/fuzz/fuzz_seeds" "$ROOT/fixtures" "$OUT"
for dir in "$ROOT"/tests/fuzz/seeds/*/; do
	[ -d "$dir" ] || continue
	mkdir -p "$OUT/$(basename "$dir")"
	cp "$dir"* "$OUT/$(basename "$dir")/"
done
for dir in "$OUT"/*/; do
	echo "seeds: $(basename "$dir"): $(find "$dir" -type f | wc -l) files"
done
