// Where a tensor lives: the CPU or one CUDA device, and whether this build and machine have CUDA.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace loom {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;  // CUDA ordinal; always 0 for the CPU

  Device() = default;
  Device(DeviceType type, int index = 0);
  // Parses "cpu", "cuda", "cuda:1" (as torch.device does); throws loom::Error otherwise.
  explicit Device(const std::string& spec);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;

  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
};

std::ostream& operator<<(std::ostream& out, const Device& device);

inline const Device kCPU{DeviceType::CPU, 0};
inline const Device kCUDA{DeviceType::CUDA, 0};
inline Device cuda_device(int index) { return Device(DeviceType::CUDA, index); }

// True when the library was built with CUDA support (LOOM_CUDA); the same answer at compile
// time is loom::kBuiltWithCuda in <loom/config.h>.
bool built_with_cuda();
// Number of CUDA devices visible; 0 in a CPU-only build or on a machine without a GPU.
int cuda_device_count();
inline bool cuda_is_available() { return cuda_device_count() > 0; }

}  // namespace loom
