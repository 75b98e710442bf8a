# tests/tools/deps.sh: the packages tidemark builds, tests and demos with
# (bison, flex, libicu-dev and zlib1g-dev build the newer PostgreSQL the
# suite also runs against: tests/tools/newer_pg.sh; libconfig-dev reads the
# config file; man-db renders the man page in test_service, which also runs
# systemd-analyze where systemd is installed; pgbouncer is the connection
# pooler test_errors puts in front of a target), and installing those
# that are missing. Sourced by tests/run-all.sh and
# tests/demo.sh; defines install_dependencies (returns non-zero on failure).

PACKAGES=(cmake gcc make pkg-config libc6-dev libpq-dev libpg-query-dev libjansson-dev
	libmicrohttpd-dev libcmocka-dev libconfig-dev postgresql-15 valgrind clang libclang-rt-14-dev
	bison flex libicu-dev zlib1g-dev man-db pgbouncer)

missing_packages() {
	local p
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			echo "$p"
	done
}

# The package's own cluster (15/main), started by installing it, is no
# part of the suite: stop it rather than leave a server running.
stop_packaged_cluster() {
	if command -v pg_lsclusters >/dev/null && pg_lsclusters 2>/dev/null | grep -q '^15 *main .*online'; then
		echo "stopping the cluster 15/main that installing postgresql-15 started"
		pg_ctlcluster 15 main stop || true
	fi
}

install_dependencies() {
	local missing
	if ! command -v dpkg-query >/dev/null; then
		echo "not a Debian system: assuming the dependencies are present (${PACKAGES[*]})"
		return 0
	fi
	mapfile -t missing < <(missing_packages)
	if [ ${#missing[@]} -eq 0 ]; then
		echo "all dependencies are installed"
		return 0
	fi
	echo "missing: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "run as root, or install them first:" >&2
		echo "  sudo apt-get install -y ${missing[*]}" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q &&
		apt-get install -y -q --no-install-recommends "${missing[@]}" || return 1
	case " ${missing[*]} " in *" postgresql-15 "*) stop_packaged_cluster ;; esac
	mapfile -t missing < <(missing_packages)
	[ ${#missing[@]} -eq 0 ] || { echo "still missing: ${missing[*]}" >&2; return 1; }
}
