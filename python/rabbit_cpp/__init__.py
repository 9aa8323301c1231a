"""rabbit-cpp from Python: run the installed rabbit_fit and read its results (docs/install.md "pip").

>>> import rabbit_cpp
>>> path = rabbit_cpp.fit("examples/example_tensor.hdf5", "-t", "0", "--doImpacts")
>>> result = rabbit_cpp.load(path)
>>> result["parms"].get()[{"parms": "sig"}].value

``fit`` runs the C++ program (no Python in the fit); ``load`` reads the result file with rabbit's
own readers when they are installed. ``run`` runs any installed program (``rabbit_compare``,
``rabbit_print_impacts``, ...) and returns its output. Failures raise RabbitError with the
program's one-line error message.
"""

from ._fit import RabbitError, fit, run
from ._load import load
from ._paths import PREFIX, program

__all__ = ["RabbitError", "fit", "load", "run", "program", "PREFIX"]
