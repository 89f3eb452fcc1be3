#include "perf/system_report.h"

#include <string>
#include <vector>

#include "core/str_cat.h"
#include "core/tensor_type.h"
#include "core/thread_pool.h"
#include "kernels/cpu_features.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/packed_weights.h"
#include "kernels/vec_dot.h"

namespace swiftlet {

std::string SystemReport() {
  const KernelIsa isa = ChosenKernelIsa();
  std::string out = StrCat("cpu features  ", CpuFeatureSummary(), "\n");
  out += StrCat("kernels       ", KernelIsaName(isa),
                " (set SWIFTLET_ISA=scalar|avx2|avxvnni|avx512|avx512vnni to cap)\n");
  out += StrCat("threads       ", PhysicalCores(), " physical cores\n");
  out += "matmul by weight type\n";
  for (const TensorTypeInfo& info : kTensorTypes) {
    if (!CanMatMul(info.type)) continue;
    std::string name(info.name);
    name.resize(std::max<size_t>(name.size(), 6), ' ');
    out += StrCat("  ", name, " ", HasSimdVecDot(isa, info.type) ? KernelIsaName(isa) : "scalar",
                  HasPackedKernel(isa, info.type) ? ", repacked in 16-row tiles" : "",
                  ", activations ", NameOf(ActivationTypeFor(info.type)), "\n");
  }
  std::string why;
  const std::vector<CudaDeviceInfo> gpus = ListCudaDevices(&why);
  if (gpus.empty()) out += StrCat("gpus          none (", why, ")\n");
  for (const CudaDeviceInfo& g : gpus) {
    out += StrCat("gpu ", g.index, "         ", g.name, ", ", g.memory_bytes >> 20, " MiB, compute capability ",
                  g.compute_major, ".", g.compute_minor, " (--device cuda:", g.index, ")\n");
  }
  return out;
}

}  // namespace swiftlet
