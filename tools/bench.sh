#!/usr/bin/env bash
# Set up .venv if needed, then run every benchmark (or the named ones): bash tools/bench.sh [--quick] [NAME...]
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec python -m tools.bench.harness "$@"
