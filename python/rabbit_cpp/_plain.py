"""Reader of rabbit_fit's plain layout (``--outputFormat plain``, docs/output-format.md "The plain
layout") with h5py only: groups, datasets and attributes, no pickles.

Histograms come back as Entry objects whose ``get()`` returns a ``hist.Hist`` when the ``hist``
package is installed (the same object rabbit's layout gives through ``H5PickleProxy.get()``), else a
Histogram with the values, variances and axes as numpy arrays.
"""

import numpy as np

PLAIN_FORMAT = "rabbit-fitresults-plain"


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


class Histogram:
    """A histogram of the plain layout without the ``hist`` package: ``values()`` and
    ``variances()`` (None for double storage) over the regular bins (``flow=True``: with the flow
    bins, 0 where the file has none), ``axes`` a list of dicts of the axis group's attributes plus
    ``edges``/``labels``/``values`` where the file has them."""

    def __init__(self, name, label, axes, values, variances, flow):
        self.name, self.label, self.axes = name, label, axes
        self._values, self._variances, self._flow = values, variances, flow

    def _select(self, array, flow):
        if array is None or flow or not self._flow:
            return array
        inner = tuple(
            slice(int(a.get("underflow", 0)), a["_extent"] - int(a.get("overflow", 0))) for a in self.axes
        )
        return array[inner]

    def values(self, flow=False):
        return self._select(self._values, flow)

    def variances(self, flow=False):
        return self._select(self._variances, flow)

    def __repr__(self):
        return f"Histogram({self.name!r}, axes={[a['name'] for a in self.axes]}, shape={self._values.shape})"


def _read_axis(group):
    axis = {k: (_text(v) if isinstance(v, (str, bytes)) else v.item()) for k, v in group.attrs.items()}
    axis.pop("rabbit_type", None)
    for member in ("edges", "labels", "values"):
        if member in group:
            data = group[member][()]
            axis[member] = np.array([_text(x) for x in data]) if data.dtype.kind == "O" else data
    return axis


def _hist_axis(axis):
    """The ``hist`` axis of a plain-layout axis (as rabbit's layout pickles it)."""
    import hist

    kind, name, label = axis["axis_type"], axis["name"], axis.get("label", "")
    flow = {"underflow": bool(axis.get("underflow", 0)), "overflow": bool(axis.get("overflow", 0))}
    if kind == "regular":
        return hist.axis.Regular(
            axis["bins"], axis["lower"], axis["upper"], name=name, label=label,
            circular=bool(axis.get("circular", 0)), **flow,
        )
    if kind == "variable":
        return hist.axis.Variable(axis["edges"], name=name, label=label, **flow)
    if kind == "integer":
        return hist.axis.Integer(axis["lower"], axis["upper"], name=name, label=label, **flow)
    if kind == "strcategory":
        return hist.axis.StrCategory(list(axis["labels"]), name=name, label=label, overflow=flow["overflow"])
    if kind == "intcategory":
        return hist.axis.IntCategory(list(axis["values"]), name=name, label=label, overflow=flow["overflow"])
    if kind == "floatcategory":  # as rabbit's layout: numpy's str of the values
        labels = list(np.array(axis["values"]).astype(str))
        return hist.axis.StrCategory(labels, name=name, label=label, overflow=flow["overflow"])
    if kind == "boolean":
        return hist.axis.Boolean(name=name, label=label)
    raise ValueError(f"rabbit_cpp: axis '{name}' has unknown axis_type '{kind}'")


class Entry:
    """A histogram of the result; ``get()`` as ``wums.ioutils.H5PickleProxy.get()``."""

    def __init__(self, histogram):
        self._histogram = histogram

    def get(self):
        try:
            import hist
        except ImportError:
            return self._histogram
        h = self._histogram
        storage = hist.storage.Weight() if h._variances is not None else hist.storage.Double()
        out = hist.Hist(*(_hist_axis(a) for a in h.axes), storage=storage, name=h.name, label=h.label)
        view = out.view(flow=bool(h._flow))
        if h._variances is not None:
            view.value, view.variance = h._values, h._variances
        else:
            view[...] = h._values
        return out

    def __repr__(self):
        return f"Entry({self._histogram!r})"


def _read_hist(group):
    axes = []
    values = group["values"][()]
    for i in range(values.ndim):
        axis = _read_axis(group[f"axis{i}"])
        axis["_extent"] = values.shape[i]
        axes.append(axis)
    variances = group["variances"][()] if "variances" in group else None
    key = _text(group.attrs.get("key", ""))
    label = _text(group.attrs["label"]) if "label" in group.attrs else None
    return Entry(Histogram(key, label, axes, values, variances, bool(group.attrs.get("flow", 0))))


def _read_scalar(dataset):
    value = dataset[()]
    kind = _text(dataset.attrs["rabbit_type"])
    if kind == "str":
        return _text(value)
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return int(value)
    return float(value)


def read_node(node):
    """A plain-layout group or dataset as Python objects: dicts (in the file's key order), scalars,
    Entry for histograms, numpy arrays (strings decoded) for other datasets."""
    import h5py

    if isinstance(node, h5py.Dataset):
        if "rabbit_type" in node.attrs:
            return _read_scalar(node)
        data = node[()]
        return np.array([_text(x) for x in data]) if data.dtype.kind == "O" else data
    if _text(node.attrs.get("rabbit_type", "")) == "hist":
        return _read_hist(node)
    names = list(node.keys())
    if "_order" in node:
        order = [_text(x) for x in node["_order"][()]]
        by_key = {_text(node[n].attrs.get("key", n)): n for n in names if n != "_order"}
        names = [by_key[k] for k in order if k in by_key]
    out = {}
    for name in names:
        child = node[name]
        out[_text(child.attrs.get("key", name))] = read_node(child)
    return out


def read_meta(h5file):
    """``/meta``: its attributes and members (docs/output-format.md "File tree")."""
    meta = {k: _text(v) if isinstance(v, (str, bytes)) else v for k, v in h5file["meta"].attrs.items()}
    meta.update(read_node(h5file["meta"]))
    return meta
