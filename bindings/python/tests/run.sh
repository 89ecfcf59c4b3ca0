#!/usr/bin/env bash
# Runs the Python binding's tests with pytest: run.sh PYTHON [--needs torch] [--] PYTEST-ARGS...
# Exits 77 (CTest's skip) with a message when PYTHON lacks pytest, numpy or, with --needs torch, torch.
set -uo pipefail
py="$1"; shift
needs=(pytest numpy)
if [ "${1:-}" = "--needs" ]; then needs+=("$2"); shift 2; fi
[ "${1:-}" = "--" ] && shift
for m in "${needs[@]}"; do
  if ! "$py" -c "import $m" 2>/dev/null; then
    echo "SKIP: $py cannot import $m (Debian: python3-pytest python3-numpy python3-torch; scripts/install-deps.sh)"
    exit 77
  fi
done
cd "$(dirname "$0")/.."
exec "$py" -m pytest -p no:cacheprovider -rs -v "$@"
