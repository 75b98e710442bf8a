#!/usr/bin/env bash
#
# tests/tools/newer_pg.sh: the newer PostgreSQL the suite also runs against.
#
#   tests/tools/newer_pg.sh --find            prints the source tarball, or nothing
#   tests/tools/newer_pg.sh TARBALL PREFIX    builds it into PREFIX once, prints the
#                                             bin directory servers run from
#
# Debian 12 packages PostgreSQL 15 only. A newer release's source (a
# tarball of its tree) is looked for in $TIDEMARK_PG_SOURCE, else as
# ../shared/pg/postgresql-*.tar.xz beside the project (the newest of them).
# It is built with ICU and without readline (configure; needs bison, flex,
# libicu-dev and zlib1g-dev: tests/tools/deps.sh installs them) and
# installed with the contrib modules the tests use (CONTRIB below) into
# PREFIX, kept for the next run: a PREFIX whose postgres reports the
# tarball's version is not built again. It is compiled with -O1 and
# without what no test runs (trim_build): on two cores that builds in
# about 1.5 minutes instead of 4 (-O2, the whole tree and every contrib
# module), and a test server does not need the rest of the speed.
#
# Run as root, servers run as the postgres user (tests/tools/pgcluster),
# who may not reach PREFIX (a clone under /root): the installed tree is then
# copied to a directory of /tmp that user can read, and that one is printed.
# Build output goes to PREFIX.build.log; exits non-zero when the build fails.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
# what the integration tests create or decode with (CREATE EXTENSION, slots)
CONTRIB="citext hstore test_decoding"
# programs of src/bin no test or tool here runs
UNUSED_PROGRAMS="pg_amcheck pg_archivecleanup pg_checksums pg_combinebackup pg_rewind
	pg_test_fsync pg_test_timing pg_verifybackup pg_waldump pg_walsummary pgbench"

find_source() {
	local f
	if [ -n "${TIDEMARK_PG_SOURCE:-}" ]; then
		[ -f "$TIDEMARK_PG_SOURCE" ] && echo "$TIDEMARK_PG_SOURCE"
		return 0
	fi
	for f in $(ls -1 "$ROOT"/../shared/pg/postgresql-*.tar.xz 2>/dev/null | sort -V | tail -n 1); do
		readlink -f "$f"
	done
}

# postgresql-19beta1.tar.xz -> 19beta1
version_of() {
	basename "$1" .tar.xz | sed 's/^postgresql-//'
}

built_version() {
	"$1/bin/postgres" --version 2>/dev/null | awk '{print $3}'
}

# Leaves out of the tree's build what no test runs: ecpg, the regression
# and isolation drivers, and the programs other than those pgcluster and
# pg_upgrade call (pg_upgrade wants initdb, pg_ctl, pg_controldata,
# pg_resetwal, pg_dump, pg_dumpall, pg_restore, psql and vacuumdb).
trim_build() {
	local d
	sed -i 's/^SUBDIRS = libpq ecpg$/SUBDIRS = libpq/' src/interfaces/Makefile
	sed -i '/^\ttest\/regress \\$/d; /^\ttest\/isolation \\$/d' src/Makefile
	for d in $UNUSED_PROGRAMS; do
		sed -i "/^\t$d \\\\$/d" src/bin/Makefile
	done
}

build() {
	local tarball=$1 prefix=$2 version work
	version=$(version_of "$tarball")
	if [ "$(built_version "$prefix")" = "$version" ]; then
		return 0
	fi
	work=$prefix.src
	rm -rf "$work" "$prefix"
	mkdir -p "$work"
	{
		tar -xJf "$tarball" -C "$work"
		cd "$work"/postgresql-*
		./configure --prefix="$prefix" --without-readline CFLAGS=-O1
		trim_build
		make -j"$(nproc 2>/dev/null || echo 2)" -s
		make -s install
		for m in $CONTRIB; do
			make -s -C "contrib/$m" install
		done
	} >"$prefix.build.log" 2>&1 || {
		echo "newer_pg: building PostgreSQL $version failed; the end of $prefix.build.log:" >&2
		tail -n 20 "$prefix.build.log" >&2
		return 1
	}
	rm -rf "$work"
}

# The bin directory the postgres user can run servers from.
usable_bin() {
	local prefix=$1 copy
	if [ "$(id -u)" -ne 0 ] || runuser -u postgres -- test -x "$prefix/bin/postgres" 2>/dev/null; then
		echo "$prefix/bin"
		return 0
	fi
	copy=/tmp/tidemark-pg-$(built_version "$prefix")
	if [ "$(built_version "$copy")" != "$(built_version "$prefix")" ]; then
		rm -rf "$copy"
		cp -a "$prefix" "$copy"
		chmod -R a+rX "$copy"
	fi
	echo "$copy/bin"
}

case "${1:-}" in
--find) find_source ;;
"" | -h | --help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//' ;;
*)
	[ $# -eq 2 ] || { echo "usage: newer_pg.sh TARBALL PREFIX" >&2; exit 2; }
	# configure takes an absolute prefix only
	prefix=$(realpath -m "$2")
	build "$(realpath "$1")" "$prefix"
	usable_bin "$prefix"
	;;
esac
