"""The commands that ``pip install`` puts on PATH (pyproject.toml ``[project.scripts]``).

Each replaces the Python process with the C++ program of the same name, installed inside this
package (``rabbit_cpp/bin``): the program gets the arguments, the signals (the preemption recipe of
docs/user-guide.md "Snapshots and resuming a preempted fit" sends SIGUSR1 to it) and the exit
status unchanged, and finds its libraries through its RUNPATH ``$ORIGIN/../lib``.
"""

import os
import sys

from ._paths import program


def _exec(name):
    path = program(name)
    try:
        os.execv(path, [name, *sys.argv[1:]])
    except OSError as e:
        sys.exit(f"{name}: error: cannot run {path}: {e.strerror}")


def rabbit_fit():
    _exec("rabbit_fit")


def rabbit_compare():
    _exec("rabbit_compare")


def rabbit_inspect():
    _exec("rabbit_inspect")


def rabbit_limit():
    _exec("rabbit_limit")


def rabbit_make_tensor():
    _exec("rabbit_make_tensor")


def rabbit_print_impacts():
    _exec("rabbit_print_impacts")


def rabbit_print_pulls_and_constraints():
    _exec("rabbit_print_pulls_and_constraints")
