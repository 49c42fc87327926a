# Sourced by the other scripts: make sure .venv exists and holds phux with its test/dev extras.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-python3}"
if [ ! -x "$root/.venv/bin/python" ]; then
    "$py" -m venv "$root/.venv"
fi
stamp="$root/.venv/.phux-installed"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
    "$root/.venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$root/.venv/bin/python" -m pip install -q -e "$root[dev]"
    touch "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
cd "$root"
