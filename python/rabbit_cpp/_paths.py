"""Where the installed C++ programs are: ``pip install`` puts the ``cmake --install`` prefix inside
this package (pyproject.toml ``wheel.install-dir``), so ``bin/`` is beside this file."""

import os

PREFIX = os.path.dirname(os.path.abspath(__file__))


def program(name):
    """The path of the installed program ``name`` (``rabbit_fit``, ``rabbit_compare``, ...).

    Raises FileNotFoundError when the package was imported from a checkout rather than installed.
    """
    path = os.path.join(PREFIX, "bin", name)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"rabbit_cpp: no program {path}: install the package with `pip install .` from the "
            "rabbit-cpp checkout (docs/install.md \"pip\")"
        )
    return path
