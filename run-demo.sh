#!/bin/sh
# Build everything and run the demo: the toy JIT walks its own stack.
# Installs the Debian packages it needs when they are missing.
set -eu
cd "$(dirname "$0")"
. ./scripts/deps.sh
sw_install_deps
sw_build
./build/examples/toyjit-demo
