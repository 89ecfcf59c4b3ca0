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


_next_port = None


def free_port():
    """A free TCP port below Linux's ephemeral range (32768-60999), as `gradwire run` picks one. A port
    from bind(("", 0)) is an ephemeral one: between this check and the server's own bind any process's
    outgoing connection may take it as its local port, and torchrun's store then fails with "Address
    already in use". Successive calls move on, so a port whose last server is still closing is skipped."""
    global _next_port
    if _next_port is None:
        _next_port = os.getpid() % 12000
    for _ in range(12000):
        port = 20000 + _next_port
        _next_port = (_next_port + 1) % 12000
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    pytest.fail("no free TCP port in 20000-31999")


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
