#!/bin/sh
# Installs the Debian packages memviz needs to build and test, when missing.
# Run as root (or with sudo available). Safe to run repeatedly.
set -e
PKGS="gcc g++ make pkg-config python3 clang-format git libzstd-dev zstd libdw-dev libelf-dev libunwind-dev
libcmocka-dev zlib1g-dev heaptrack valgrind sqlite3 perl golang-go python3-jsonschema"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "memviz: installing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
