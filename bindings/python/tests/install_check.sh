#!/usr/bin/env bash
# pip-installs bindings/python into a fresh virtual environment and runs the README's example in it, away
# from the source tree: install_check.sh PYTHON LIBGRADWIRE WORKDIR. Offline: the venv sees the system's
# setuptools and wheel (Debian python3-setuptools, python3-wheel) and pip builds without isolation.
set -euo pipefail
py="$1" lib="$2" work="$3"
src="$(cd "$(dirname "$0")/.." && pwd)"
skip() {
  echo "SKIP: $1 lacks venv/ensurepip, setuptools or wheel (Debian: python3-venv python3-setuptools python3-wheel)"
  exit 77
}
"$py" -c "import venv, ensurepip" 2>/dev/null || skip "$py"
rm -rf "$work"
"$py" -m venv --system-site-packages "$work/venv"
# PYTHON itself in a virtual environment (.venv-torch, torch 2.x): the fresh one is made from its base
# interpreter, so it also sees PYTHON's packages, through a .pth file, ahead of the system's.
parent=$("$py" -c 'import sys, sysconfig; print(sysconfig.get_paths()["purelib"] if sys.prefix != sys.base_prefix else "")')
if [ -n "$parent" ]; then
  "$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' | {
    read -r site; echo "$parent" > "$site/gw-parent-venv.pth"; }
fi
"$work/venv/bin/python" -c "import setuptools, wheel" 2>/dev/null || skip "a virtual environment of $py"
# A copy of the package folder: pip must not write build/ or *.egg-info into the source tree.
cp -r "$src" "$work/src"
rm -rf "$work/src/tests" "$work/src/build" "$work/src"/*.egg-info
"$work/venv/bin/pip" install --quiet --no-index --no-build-isolation "$work/src"
cd "$work"
GRADWIRE_LIBRARY="$lib" "$work/venv/bin/python" - <<'PY'
import numpy as np, gradwire
print("installed at", gradwire.__file__)
assert "/venv/" in gradwire.__file__, "not the installed copy"
with gradwire.Runtime(text='[codec]\nname = "int8"\n') as rt, gradwire.Comm(rt) as comm, rt.codec() as int8:
    grads = np.ones(1 << 20, dtype=np.float32)
    comm.allreduce_compressed(int8, grads)           # average over the ranks, in place
    print(comm.rank, comm.size, grads[:4])
    assert np.allclose(grads, 1.0)
import gradwire.torch, torch
print("torch", torch.__version__, "from", torch.__file__)
print("ok: README example ran from the installed package")
PY
