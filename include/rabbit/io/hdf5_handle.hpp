#pragma once
// RAII ownership of HDF5 C API identifiers (files, groups, datasets, dataspaces, types, property
// lists, attributes): one small type that closes the id with the right H5*close on destruction.
#include <hdf5.h>

#include <utility>

namespace rabbit::h5 {

class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }

  void reset() {
    if (id_ < 0) return;
    switch (H5Iget_type(id_)) {
      case H5I_FILE:
        H5Fclose(id_);
        break;
      case H5I_GROUP:
        H5Gclose(id_);
        break;
      case H5I_DATASET:
        H5Dclose(id_);
        break;
      case H5I_DATASPACE:
        H5Sclose(id_);
        break;
      case H5I_DATATYPE:
        H5Tclose(id_);
        break;
      case H5I_ATTR:
        H5Aclose(id_);
        break;
      case H5I_GENPROP_LST:
        H5Pclose(id_);
        break;
      default:
        break;
    }
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

}  // namespace rabbit::h5
