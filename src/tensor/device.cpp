#include "loom/tensor/device.h"

#include <ostream>

#include "loom/tensor/error.h"

namespace loom {

Device::Device(DeviceType type, int index)
    : type(type), index(type == DeviceType::CPU ? 0 : index) {
  LOOM_CHECK(index >= 0, "Device: index must be non-negative, got ", index);
}

Device::Device(const std::string& spec) {
  if (spec == "cpu") return;
  const std::string prefix = "cuda";
  LOOM_CHECK(spec.compare(0, prefix.size(), prefix) == 0,
             "Device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"", spec, "\"");
  type = DeviceType::CUDA;
  if (spec.size() == prefix.size()) return;
  LOOM_CHECK(spec[prefix.size()] == ':' && spec.size() > prefix.size() + 1,
             "Device: expected \"cuda:N\", got \"", spec, "\"");
  const std::string digits = spec.substr(prefix.size() + 1);
  LOOM_CHECK(digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 6,
             "Device: bad CUDA index in \"", spec, "\"");
  index = std::stoi(digits);
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

}  // namespace loom
