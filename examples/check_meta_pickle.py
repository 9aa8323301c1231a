#!/usr/bin/env python3
"""Optional check (not used by the build or tests): unpickle the `meta` group of a fit tensor
with the real hist / boost-histogram / numpy and print the channels and axes.

    python3 -m venv /tmp/pyv && /tmp/pyv/bin/pip install numpy hist h5py
    /tmp/pyv/bin/python examples/check_meta_pickle.py examples/example_tensor.hdf5
"""
import pickle
import sys
import warnings

import h5py
import hist  # noqa: F401  (the pickle refers to hist.axis classes)

warnings.simplefilter("ignore", DeprecationWarning)  # numpy 2 warns about numpy.core paths

with h5py.File(sys.argv[1], "r") as f:
    group = f["meta"]
    assert int(group.attrs["narf_h5py_pickle_protocol_version"]) == 1
    meta = pickle.loads(group["pickle_data"][...].tobytes())

for name, channel in meta["channel_info"].items():
    print(f"{name}: masked={channel['masked']} flow={channel['flow']}")
    for axis in channel["axes"]:
        print(f"    {axis!r}  extent={axis.extent}")
print({k: v for k, v in meta.items() if k != "channel_info"})
