#pragma once
// A small Python pickle *writer* for the `meta` group of rabbit fit tensors (docs/input-reader.md "The meta
// pickle", docs/tensor-writer.md "The meta pickle bytes"): emits a protocol-5 stream (no frames, no memo)
// that CPython's unpickler loads into the same objects rabbit's TensorWriter pickles — plain containers plus
// hist.axis.* wrappers around boost_histogram._core.axis cores with the docs/input-reader.md "Per axis" state
// tuples, numpy arrays in the
// `_frombuffer` form.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::pickle {

/// Streaming opcode emitter. Containers are written as EMPTY_x + MARK ... APPENDS/SETITEMS; the
/// caller is responsible for balanced begin/end calls.
class PickleWriter {
 public:
  PickleWriter();  // writes PROTO 5

  void none();
  void boolean(bool value);
  void integer(int64_t value);
  void real(double value);  // BINFLOAT, big-endian
  void string(const std::string& utf8);
  void bytearray(const uint8_t* data, size_t size);  // BYTEARRAY8
  void bytes(const void* data, size_t size);         // SHORT_BINBYTES / BINBYTES / BINBYTES8
  /// STACK_GLOBAL reference to module.name.
  void global(const std::string& module, const std::string& name);
  void mark();
  void tuple_from_mark();
  void empty_tuple();
  void empty_dict();
  void empty_list();
  void setitems_from_mark();
  void appends_from_mark();
  void setitem();
  void newobj();
  void reduce();
  void build();
  /// BINPERSID: the object on the stack becomes a persistent id, resolved by the unpickler's
  /// persistent_load (wums resolves H5Path to the HDF5 object).
  void persistent_id();
  /// MEMOIZE: remembers the object on the stack; returns its memo index for get().
  uint32_t memoize();
  /// BINGET / LONG_BINGET: pushes the memoized object again (the same Python object).
  void get(uint32_t memo_index);
  /// A 1-D numpy array (C order) of the given typestr ("f8", "i4", "i8", ...) as numpy's protocol-5
  /// reduce: numpy.core.numeric._frombuffer(bytearray, dtype, shape, "C").
  void ndarray_1d(const std::string& typestr, const void* data, size_t itemsize, size_t count);
  /// The same array as numpy.frombuffer(bytes, "<typestr"): numpy's public API, loadable by numpy 1
  /// and 2 alike (numpy.core became numpy._core in numpy 2).
  void ndarray_1d_frombuffer(const std::string& typestr, const void* data, size_t itemsize, size_t count);

  /// Writes STOP and returns the finished stream.
  std::vector<uint8_t> finish();

 private:
  void op(uint8_t code) { out_.push_back(code); }
  void raw(const void* data, size_t size);
  std::vector<uint8_t> out_;
  uint32_t memo_size_ = 0;
  bool finished_ = false;
};

/// boost-histogram core class name implied by an axis kind and its flow/growth/circular flags
/// (the inverse of docs/input-reader.md "Per axis"). Throws rabbit::Error for combinations that
/// boost-histogram does not have (e.g. a circular integer axis with underflow).
std::string core_class_for(const AxisInfo& axis);

/// How write_axis encodes its numpy arrays (variable edges, integer categories).
enum class ArrayEncoding {
  numpy_core_frombuffer,  // numpy's own protocol-5 reduce, as rabbit's tensors hold it
  numpy_frombuffer,       // numpy.frombuffer: result files, read by numpy 1 and 2
};

/// Pickles one axis as hist.axis.<Type>(…) with its boost_histogram._core.axis core (docs/input-reader.md
/// "Per axis").
void write_axis(PickleWriter& writer, const AxisInfo& axis,
                ArrayEncoding arrays = ArrayEncoding::numpy_core_frombuffer);

// ---- the objects of wums.ioutils' h5py pickle protocol (result files, docs/output-format.md) ----

/// wums.ioutils.H5Path(path) as a persistent id: wums' unpickler returns the h5py group or
/// dataset at that absolute path of the file.
void h5_object_reference(PickleWriter& writer, const std::string& path);
/// wums.ioutils.H5PickleProxy(None, <group>): an object pickled into the group at `group_path`
/// (its own pickle_data), loaded lazily by proxy.get().
void h5_pickle_proxy(PickleWriter& writer, const std::string& group_path);
/// wums.ioutils.H5Buffer(None, <dataset>, False): a writable buffer read from the uint8 dataset at
/// `dataset_path` (a histogram's storage, read by make_Hist into the histogram's view).
void h5_buffer(PickleWriter& writer, const std::string& dataset_path);

/// The input tensor's meta as a complete pickle stream to pass through into result files: its own
/// stored bytes when they load without a persistent id resolver, else the meta rebuilt from what
/// was read (channels, symmetric_tensor, systematic_type; empty meta_info).
std::vector<uint8_t> input_meta_for_output(const FitInputData& input);

/// The whole meta dict of a tensor file: {"channel_info": {name: {"axes": [...], "masked": b,
/// "flow": b}}, "symmetric_tensor": b, "systematic_type": s, "meta_info": {key: str}}.
std::vector<uint8_t> make_meta_pickle(const std::vector<ChannelInfo>& channels, bool symmetric_tensor,
                                      SystematicType systematic_type,
                                      const std::vector<std::pair<std::string, std::string>>& meta_info);

}  // namespace rabbit::pickle
