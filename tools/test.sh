#!/usr/bin/env bash
# Set up .venv if needed, then run the whole test suite. Extra arguments go to pytest.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec python -m pytest -n 2 "$@"
