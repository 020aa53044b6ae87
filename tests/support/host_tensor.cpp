#include "host_tensor.h"

#include <cstring>
#include <stdexcept>

#include "spec/half_precision.h"

namespace attnforge::testing {

HostTensor::HostTensor(halide_type_t type, Extents extents, Extents memory_order)
    : type_(type), extents_(extents) {
  size_t count = 1;
  for (int dim : memory_order) {
    dims_[dim] = halide_dimension_t(0, extents[dim], static_cast<int32_t>(count));
    count *= static_cast<size_t>(extents[dim]);
  }
  storage_.assign(count * type.bytes(), 0);
  buffer_.host = storage_.data();
  buffer_.type = type_;
  buffer_.dimensions = 4;
  buffer_.dim = dims_.data();
}

size_t HostTensor::offset(const Extents& index) const {
  size_t element = 0;
  for (int dim = 0; dim < 4; ++dim) {
    if (index[dim] < 0 || index[dim] >= extents_[dim]) throw std::out_of_range("HostTensor index");
    element += static_cast<size_t>(index[dim]) * dims_[dim].stride;
  }
  return element * type_.bytes();
}

double HostTensor::set(const Extents& index, double value) {
  uint8_t* at = storage_.data() + offset(index);
  float f = static_cast<float>(value);
  if (type_.code == halide_type_int && type_.bits == 8) {
    *reinterpret_cast<int8_t*>(at) = static_cast<int8_t>(value);
  } else if (type_.code == halide_type_uint && type_.bits == 8) {
    *at = static_cast<uint8_t>(value);
  } else if (type_.code == halide_type_int) {
    int32_t integer = static_cast<int32_t>(value);
    std::memcpy(at, &integer, sizeof integer);
  } else if (type_.bits == 32) {
    std::memcpy(at, &f, sizeof f);
  } else {
    uint16_t bits = type_.code == halide_type_bfloat ? float_to_bf16_bits(f) : float_to_f16_bits(f);
    std::memcpy(at, &bits, sizeof bits);
  }
  return get(index);
}

double HostTensor::get(const Extents& index) const {
  const uint8_t* at = storage_.data() + offset(index);
  if (type_.code == halide_type_int && type_.bits == 8) return *reinterpret_cast<const int8_t*>(at);
  if (type_.code == halide_type_uint && type_.bits == 8) return *at;
  if (type_.code == halide_type_int) {
    int32_t integer;
    std::memcpy(&integer, at, sizeof integer);
    return integer;
  }
  if (type_.bits == 32) {
    float f;
    std::memcpy(&f, at, sizeof f);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, at, sizeof bits);
  return type_.code == halide_type_bfloat ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
}

std::vector<double> HostTensor::values() const {
  std::vector<double> result;
  result.reserve(static_cast<size_t>(extents_[0]) * extents_[1] * extents_[2] * extents_[3]);
  for (int x3 = 0; x3 < extents_[3]; ++x3) {
    for (int x2 = 0; x2 < extents_[2]; ++x2) {
      for (int x1 = 0; x1 < extents_[1]; ++x1) {
        for (int x0 = 0; x0 < extents_[0]; ++x0) result.push_back(get({x0, x1, x2, x3}));
      }
    }
  }
  return result;
}

void HostTensor::broadcast(int dim, int extent) {
  if (extents_[dim] != 1) throw std::invalid_argument("only an extent-1 dim can be broadcast");
  dims_[dim].extent = extent;
  dims_[dim].stride = 0;
  extents_[dim] = extent;
}

}  // namespace attnforge::testing
