#!/bin/sh
# Installs the Debian packages memviz needs to build and test, when missing,
# then the npm packages the tests feed exports to (tests/consumers, pinned by
# its package-lock.json). Run as root (or with sudo available). Safe to run
# repeatedly.
set -e
# libdevel-nytprof-perl: for the flamegraph.pl it ships, which the tests run on
# `memviz export --format collapsed`. prometheus: its server and promtool read
# `memviz run --live`'s /metrics in the tests; tmux drives the terminal UI;
# chromium runs the web UI in its tests; uftrace is what bench/callgraph/run
# compares memviz run --callgraph with; graphviz draws `memviz export --format
# dot` in the tests.
PKGS="gcc g++ make pkg-config python3 clang libclang-rt-14-dev clang-format git libzstd-dev zstd libdw-dev libelf-dev libunwind-dev
libcmocka-dev zlib1g-dev heaptrack valgrind sqlite3 perl golang-go python3-jsonschema strace groff-base binutils
libdevel-nytprof-perl libmicrohttpd-dev libjansson-dev libncurses-dev prometheus tmux curl chromium uftrace graphviz"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
# Some Node.js packages bring npm themselves (and conflict with Debian's npm
# package): only a missing npm command asks for Debian's.
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    echo "memviz: installing Debian packages:$missing"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# npm ci only when a lock file changed since the last install: the test
# consumers, and the web UI's build tools, libraries and test driver.
cd "$(dirname "$0")/.."
for dir in tests/consumers web; do
    lock=$dir/package-lock.json
    stamp=$dir/node_modules/.memviz-installed-lock
    if ! cmp -s "$lock" "$stamp"; then
        echo "memviz: installing $dir's npm packages (npm ci --prefix $dir)"
        npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts
        cp "$lock" "$stamp"
    fi
done
