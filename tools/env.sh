# Sourced by the other scripts: make sure .venv exists and holds phux with its test/dev extras.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-python3}"
if [ ! -x "$root/.venv/bin/python" ]; then
    "$py" -m venv "$root/.venv"
fi
stamp="$root/.venv/.phux-installed"
# (setup.py and the C it builds: the editable install compiles the native strip once)
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ] || [ "$root/setup.py" -nt "$stamp" ] ||
    [ "$root/src/phux/engine/_strip.c" -nt "$stamp" ]; then
    "$root/.venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$root/.venv/bin/python" -m pip install -q -e "$root[dev]"
    touch "$stamp"
fi
# The real bash-preexec for the shell-configuration tests (not kept in the repository).
if [ ! -f "$root/.venv/share/phux-tests/bash-preexec.sh" ]; then
    (cd "$root" && .venv/bin/python -m tools.bash_preexec >/dev/null 2>&1) ||
        echo "tools/env.sh: could not fetch bash-preexec (its corpus tests will skip)" >&2
fi
export PATH="$root/.venv/bin:$PATH"
cd "$root"
