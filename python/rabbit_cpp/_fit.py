"""rabbit_cpp.fit: run the installed rabbit_fit from Python (a notebook, a script)."""

import os
import subprocess
import sys
import tempfile

from ._paths import program


class RabbitError(RuntimeError):
    """A rabbit-cpp program failed. The message is the program's one-line error
    (``rabbit_fit: error: ...``); ``returncode`` is its exit status (docs/user-guide.md "Exit
    codes"), ``log`` everything it printed."""

    def __init__(self, message, returncode=None, log=""):
        super().__init__(message)
        self.returncode = returncode
        self.log = log


_RESULT_LINE = "Results written in file "


def _error_line(name, output, returncode):
    """The program's own one-line error, else the last line it printed."""
    lines = [line for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(f"{name}: error:"):
            return line
    last = lines[-1] if lines else "no output"
    return f"{name}: exited with status {returncode}: {last}"


def run(name, *args, verbose=False):
    """Run the installed program ``name`` with ``args`` (strings, or anything ``str()`` makes one)
    and return what it printed (stdout and stderr together, in order).

    Raises RabbitError with the program's one-line error message when it exits with a non-zero
    status. With ``verbose=True`` the output is also written to ``sys.stdout`` (a notebook shows
    it), after the program ends.
    """
    cmd = [program(name), *map(str, args)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if verbose:
        sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise RabbitError(_error_line(name, proc.stdout, proc.returncode), proc.returncode, proc.stdout)
    return proc.stdout


def fit(tensor, *args, output=None, verbose=False):
    """Fit the rabbit input tensor ``tensor`` with the installed rabbit_fit and return the absolute
    path of the result file.

    ``args`` are rabbit_fit's command-line options as separate strings, e.g.
    ``fit("tensor.hdf5", "-t", "-1", "0", "--doImpacts", "--saveHists")`` (docs/user-guide.md).
    ``output`` is the output directory (rabbit_fit's ``-o``), created if missing; by default a new
    temporary directory (``rabbit_fit_*`` in the system's temporary folder, not removed). ``--outname``
    and ``-p`` in ``args`` name the file as on the command line.

    Raises RabbitError (message: rabbit_fit's one-line error, e.g. ``rabbit_fit: error: --foo: ...``)
    when the fit fails.

    >>> result = fit("examples/example_tensor.hdf5", "-t", "0")
    >>> fitresult = load(result)
    """
    if output is None:
        output = tempfile.mkdtemp(prefix="rabbit_fit_")
    log = run("rabbit_fit", os.fspath(tensor), "-o", os.fspath(output), *args, verbose=verbose)
    # rabbit_fit names the file it wrote (after -o, --outname and -p) on its last stdout line.
    for line in reversed(log.splitlines()):
        if line.startswith(_RESULT_LINE):
            return os.path.abspath(line[len(_RESULT_LINE) :].strip())
    raise RabbitError(f"rabbit_fit: no '{_RESULT_LINE.strip()}' line in its output", 0, log)
