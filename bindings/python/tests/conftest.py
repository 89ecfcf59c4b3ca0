"""Shared fixtures. The tests import the package from this source tree (bindings/python) unless it is
installed; libgradwire comes from GRADWIRE_LIBRARY (CTest sets it) or the usual search."""
import os
import shutil
import socket
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PACKAGE_ROOT))
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)

# A rank of the test may inherit GW_* from a launcher; the single-process tests want one rank.
for var in ("GW_RANK", "GW_WORLD_SIZE", "GW_LOCAL_RANK", "GW_ROOT_ADDR", "GW_ROOT_PORT", "RANK", "WORLD_SIZE"):
    os.environ.pop(var, None)


def gradwire_cli():
    """The gradwire command: GRADWIRE_CLI, else the source tree's build/bin/gradwire, else PATH."""
    for c in (os.environ.get("GRADWIRE_CLI"), os.path.join(REPO, "build", "bin", "gradwire"), shutil.which("gradwire")):
        if c and os.path.exists(c):
            return c
    pytest.fail("the gradwire command is not built: set GRADWIRE_CLI or run scripts/build.sh")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(**extra):
    """The environment for a rank started by a test: this package on PYTHONPATH, the same library."""
    import gradwire
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["GRADWIRE_LIBRARY"] = gradwire.library_path()
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture
def runtime():
    import gradwire
    with gradwire.Runtime(text='[codec]\nname = "int8"\n[runtime]\ntimeout_s = 30\n') as rt:
        yield rt
