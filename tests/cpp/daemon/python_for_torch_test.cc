#include "daemon/compiler/python_for_torch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace neuron::rtd::compiler {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(PythonForTorchTest, AVenvsTorchIsItsOwnInterpreters) {
  EXPECT_THAT(PythonCandidatesForTorch("/work/.venv/lib/python3.11/site-packages/torch/lib"),
              ElementsAre("/work/.venv/bin/python3.11", "/work/.venv/bin/python3"));
  // A trailing slash and dots are the same directory.
  EXPECT_THAT(PythonCandidatesForTorch("/opt/py/lib/./python3.12/site-packages/torch/lib/"),
              ElementsAre("/opt/py/bin/python3.12", "/opt/py/bin/python3"));
}

TEST(PythonForTorchTest, DebiansPackagesAndPipAsRootAreTheSystemsInterpreter) {
  EXPECT_THAT(PythonCandidatesForTorch("/usr/lib/python3/dist-packages/torch/lib"),
              ElementsAre("/usr/bin/python3"));
  EXPECT_THAT(PythonCandidatesForTorch("/usr/local/lib/python3.11/dist-packages/torch/lib"),
              ElementsAre("/usr/local/bin/python3.11", "/usr/local/bin/python3",
                          "/usr/bin/python3.11", "/usr/bin/python3"));
}

TEST(PythonForTorchTest, ALibtorchOutsideAPythonLibraryHasNoInterpreter) {
  // The Debian package's own copy, a libtorch unpacked by hand, a layout
  // that only looks alike.
  EXPECT_THAT(PythonCandidatesForTorch("/usr/lib/neuron-rtd/torch"), IsEmpty());
  EXPECT_THAT(PythonCandidatesForTorch("/opt/libtorch/lib"), IsEmpty());
  EXPECT_THAT(PythonCandidatesForTorch("/x/lib/python3.11/site-packages/nottorch/lib"), IsEmpty());
  EXPECT_THAT(PythonCandidatesForTorch("/x/lib/ruby/site-packages/torch/lib"), IsEmpty());
  EXPECT_THAT(PythonCandidatesForTorch("/x/share/python3.11/site-packages/torch/lib"), IsEmpty());
  EXPECT_THAT(PythonCandidatesForTorch(""), IsEmpty());
  EXPECT_THAT(PythonCandidatesForTorch("/"), IsEmpty());
}

}  // namespace
}  // namespace neuron::rtd::compiler
