#include "daemon/hal/sim/compiled_package.h"

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include "absl/strings/str_format.h"

namespace neuron::rtd::hal::sim {

CompiledPackage::CompiledPackage(std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader)
    : loader_(std::move(loader)) {}

CompiledPackage::~CompiledPackage() = default;

absl::StatusOr<std::unique_ptr<CompiledPackage>> CompiledPackage::Load(const std::string& path) {
  try {
    auto loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
        path, "model", /*run_single_threaded=*/false, /*num_runners=*/1,
        /*device_index=*/-1);
    return std::unique_ptr<CompiledPackage>(new CompiledPackage(std::move(loader)));
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(
        absl::StrFormat("compiled graph %s does not load: %s", path, error.what()));
  }
}

void CompiledPackage::Run(std::vector<at::Tensor> tensors) const {
  absl::MutexLock lock(&mutex_);
  loader_->boxed_run(std::move(tensors));
}

}  // namespace neuron::rtd::hal::sim
