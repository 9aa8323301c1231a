"""rabbit_cpp.load: a rabbit_fit result file as Python objects (docs/output-format.md)."""

import os

from ._fit import RabbitError


def _result_key(h5file, fit, path):
    """The result group as rabbit.io_tools.get_fitresult picks it: ``results`` (the data fit), else
    ``results_asimov``; ``results_<fit>`` when ``fit`` is given (``asimov``, ``toy1``, ...)."""
    key = "results" if fit is None else f"results_{fit}"
    if fit is None and key not in h5file:
        key = "results_asimov"
    groups = [k for k in h5file if k.startswith("results")]
    if not groups:
        raise RabbitError(f"rabbit_cpp.load: {path} is not a rabbit_fit result (no 'results*' group)")
    if key not in h5file:
        raise RabbitError(f"rabbit_cpp.load: {path} has no group '{key}' (result groups: {', '.join(groups)})")
    return key


def load(result, fit=None, meta=False):
    """Read a rabbit_fit result: ``result`` is the file (``fitresults.hdf5``, what ``fit`` returns)
    or its output directory.

    Returns the result dict of one fit, as ``rabbit.io_tools.get_fitresult(result, fit, meta)``
    does: keys as in docs/output-format.md "Members of a result group"; histograms are proxies whose
    ``get()`` gives a ``hist.Hist``; with ``meta=True`` a pair (result, meta). ``fit`` selects the
    fit (``"asimov"``, ``"toy1"``; default: the data fit, else the Asimov one).

    Rabbit's layout (the default ``--outputFormat rabbit``) is read with rabbit's own
    ``io_tools`` when rabbit-fit is installed, else with ``wums`` (its unpickler, which io_tools
    uses); the plain layout (``--outputFormat plain``) with h5py alone (histograms become
    ``hist.Hist`` when the ``hist`` package is installed). ``pip install "rabbit-cpp[load]"``
    installs h5py, hist and wums. Rabbit's layout keeps the file open: its histograms are read
    on ``get()``.

    Raises RabbitError (one line naming the file) when the file is not a rabbit_fit result, has
    no such fit, or needs a package that is not installed.
    """
    path = os.fspath(result)
    if os.path.isdir(path):
        path = os.path.join(path, "fitresults.hdf5")
    try:
        import h5py
    except ImportError:
        raise RabbitError('rabbit_cpp.load: needs h5py (pip install "rabbit-cpp[load]")') from None
    try:
        h5file = h5py.File(path, "r")
    except OSError as e:
        raise RabbitError(f"rabbit_cpp.load: cannot open {path}: {e}") from None
    # Imported here, after h5py (which brings numpy): the commands on PATH import this package and
    # must start in an environment without numpy.
    from ._plain import PLAIN_FORMAT, read_meta, read_node

    if h5file.attrs.get("rabbit_plain_format") in (PLAIN_FORMAT, PLAIN_FORMAT.encode()):
        with h5file:
            fitresult = read_node(h5file[_result_key(h5file, fit, path)])
            return (fitresult, read_meta(h5file)) if meta else fitresult

    if "meta" not in h5file or "pickle_data" not in h5file["meta"]:
        h5file.close()
        raise RabbitError(f"rabbit_cpp.load: {path} is not a rabbit_fit result (no /meta/pickle_data)")
    key = _result_key(h5file, fit, path)
    try:
        from rabbit import io_tools
    except ImportError:
        io_tools = None
    if io_tools is not None:
        return io_tools.get_fitresult(h5file, result=key[len("results_") :] or None, meta=meta)
    try:
        from wums import ioutils
    except ImportError:
        h5file.close()
        raise RabbitError(
            f"rabbit_cpp.load: {path} is in rabbit's layout, which needs wums or rabbit-fit "
            '(pip install "rabbit-cpp[load]"), or write it with --outputFormat plain'
        ) from None
    fitresult = ioutils.pickle_load_h5py(h5file[key])
    return (fitresult, ioutils.pickle_load_h5py(h5file["meta"])) if meta else fitresult
