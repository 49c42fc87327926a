#!/usr/bin/env bash
# Set up .venv if needed, then do something real with phux: start a private
# server, create a session, run a command in it and print the JSON result.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
demo_dir="$(mktemp -d "${TMPDIR:-/tmp}/phux-demo.XXXXXX")"
export PHUX_SOCKET="$demo_dir/phux.sock"
cleanup() {
    phux kill --server >/dev/null 2>&1 || true
    rm -rf "$demo_dir"
}
trap cleanup EXIT

set -x
phux server --daemon --exit-after-idle 60
phux new --json -s demo
phux run --json demo 'echo "hello from $(basename "$SHELL") in $(pwd)"; seq 3'
phux snapshot demo
phux ls --json
