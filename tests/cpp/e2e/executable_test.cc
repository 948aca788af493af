// Eager-op executables: loaded once per host by content hash, launched with
// per-call addresses and scalars, run by the sim through the ATen
// dispatcher on HBM.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/content_hash.h"
#include "neuron/rtd/v1/admin.grpc.pb.h"
#include "neuron/rtd/v1/executable.pb.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"
#include "absl/time/clock.h"
#include "e2e/eager_op_builders.h"
#include "e2e/executable_fixture.h"
#include "neuronrt/session.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

namespace v1 = rtd::v1;
using ::testing::HasSubstr;
using testing::Body;
using testing::Spec;

TEST_F(ExecutableTest, MatmulRunsThroughTheAtenDispatcher) {
  v1::EagerOp mm;
  mm.set_name("aten::mm");
  *mm.add_arguments()->mutable_tensor() = Spec({4, 3}, {3, 1}, 0);
  *mm.add_arguments()->mutable_tensor() = Spec({3, 2}, {2, 1}, 1);
  *mm.add_outputs() = Spec({4, 2}, {2, 1}, 2);
  auto id = session_->LoadExecutable(Body(mm), "mm(f32[4,3],f32[3,2])");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_GE(*id, NEURON_RTD_FIRST_LOADED_EXECUTABLE);

  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> b = {1, 0, 0, 1, 1, 1};
  Upload(0, a);
  Upload(100, b);
  const uint64_t addresses[] = {At(0), At(100), At(200)};
  ASSERT_TRUE(stream_->Launch(*id, addresses, {}, "aten::mm").ok());
  std::vector<float> expected;
  for (int row = 0; row < 4; ++row) {
    for (int column = 0; column < 2; ++column) {
      float sum = 0;
      for (int k = 0; k < 3; ++k) sum += a[row * 3 + k] * b[k * 2 + column];
      expected.push_back(sum);
    }
  }
  EXPECT_EQ(Download(200, 8), expected);
}

TEST_F(ExecutableTest, ImmediateScalarsChangeFromCallToCall) {
  v1::EagerOp add;
  add.set_name("aten::add");
  add.set_overload("Tensor");
  *add.add_arguments()->mutable_tensor() = Spec({4}, {1}, 0);
  *add.add_arguments()->mutable_tensor() = Spec({4}, {1}, 1);
  v1::ImmediateScalar* alpha = add.add_arguments()->mutable_immediate();
  alpha->set_kind(v1::ImmediateScalar::KIND_DOUBLE);
  alpha->set_offset(0);
  *add.add_outputs() = Spec({4}, {1}, 2);
  const uint64_t id = *session_->LoadExecutable(Body(add));
  Upload(0, {1, 2, 3, 4});
  Upload(10, {10, 10, 10, 10});
  const uint64_t addresses[] = {At(0), At(10), At(20)};
  for (double factor : {2.0, -0.5}) {
    ASSERT_TRUE(stream_->Launch(id, addresses,
                                std::span(reinterpret_cast<const uint8_t*>(&factor), 8))
                    .ok());
    std::vector<float> result = Download(20, 4);
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(result[i], (i + 1) + factor * 10) << factor;
  }
}

TEST_F(ExecutableTest, RandomOpsAreReproducibleFromTheirSeed) {
  v1::EagerOp normal_;
  normal_.set_name("aten::normal_");
  *normal_.add_arguments()->mutable_tensor() = Spec({64}, {1}, 0);
  normal_.add_arguments()->set_double_value(0.0);
  normal_.add_arguments()->set_double_value(1.0);
  normal_.add_arguments()->mutable_generator()->set_offset(0);
  const uint64_t id = *session_->LoadExecutable(Body(normal_));
  auto draw = [&](uint64_t seed, uint64_t float_offset) {
    const uint64_t addresses[] = {At(float_offset)};
    EXPECT_TRUE(
        stream_->Launch(id, addresses, std::span(reinterpret_cast<const uint8_t*>(&seed), 8)).ok());
    return Download(float_offset, 64);
  };
  const std::vector<float> first = draw(1234, 0);
  EXPECT_EQ(draw(1234, 100), first);
  EXPECT_NE(draw(1235, 200), first);
  float sum = 0;
  for (float value : first) sum += value;
  EXPECT_LT(std::abs(sum / 64), 0.5f) << "normally distributed around 0";
}

// Plans built as plain data (what torch_neuronx builds), encoded by
// libneuronrt: every argument kind the plugin uses.
rtd::TensorLayout Layout(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                         uint32_t address, int32_t dtype = 6) {
  return rtd::TensorLayout{.dtype = dtype,
                           .sizes = std::move(sizes),
                           .strides = std::move(strides),
                           .address_index = address};
}

TEST_F(ExecutableTest, ScalarListsAreReadFromEachLaunch) {
  rtd::EagerOpPlan plan{.name = "aten::_foreach_mul_", .overload = "ScalarList"};
  plan.arguments.emplace_back(
      std::vector<rtd::TensorLayout>{Layout({2}, {1}, 0), Layout({2}, {1}, 1)});
  plan.arguments.emplace_back(rtd::ImmediateScalarList{
      .kind = rtd::ImmediateScalar::Kind::kDouble, .offset = 0, .count = 2});
  absl::StatusOr<uint64_t> id = session_->LoadEagerOp(plan, "foreach_mul_");
  ASSERT_TRUE(id.ok()) << id.status();
  Upload(0, {1, 2});
  Upload(10, {3, 4});
  const double factors[] = {2.0, -3.0};
  const uint64_t addresses[] = {At(0), At(10)};
  ASSERT_TRUE(stream_->Launch(*id, addresses,
                              std::span(reinterpret_cast<const uint8_t*>(factors), 16))
                  .ok());
  EXPECT_EQ(Download(0, 2), (std::vector<float>{2, 4}));
  EXPECT_EQ(Download(10, 2), (std::vector<float>{-9, -12}));
}

TEST_F(ExecutableTest, ComplexScalarsAreSixteenBytesEach) {
  // _foreach_mul_ of two complex64 tensors by [2j, 1-1j]: each scalar is a
  // (real, imaginary) pair of doubles.
  constexpr int32_t kComplex64 = 9;
  rtd::EagerOpPlan plan{.name = "aten::_foreach_mul_", .overload = "ScalarList"};
  plan.arguments.emplace_back(std::vector<rtd::TensorLayout>{
      Layout({2}, {1}, 0, kComplex64), Layout({2}, {1}, 1, kComplex64)});
  plan.arguments.emplace_back(rtd::ImmediateScalarList{
      .kind = rtd::ImmediateScalar::Kind::kComplexDouble, .offset = 0, .count = 2});
  absl::StatusOr<uint64_t> id = session_->LoadEagerOp(plan, "foreach_mul_complex");
  ASSERT_TRUE(id.ok()) << id.status();
  Upload(0, {1, 0, 2, 0});   // [1, 2]
  Upload(10, {0, 1, 3, 0});  // [1j, 3]
  const double factors[] = {0.0, 2.0, 1.0, -1.0};
  const uint64_t addresses[] = {At(0), At(10)};
  ASSERT_TRUE(stream_->Launch(*id, addresses,
                              std::span(reinterpret_cast<const uint8_t*>(factors), 32))
                  .ok());
  EXPECT_EQ(Download(0, 4), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(Download(10, 4), (std::vector<float>{1, 1, 3, -3}));
}

TEST_F(ExecutableTest, OptionalTensorListsIndex) {
  // x[:, idx] with x 2x3 and idx [2, 0]: index.Tensor(x, [None, idx]).
  rtd::EagerOpPlan plan{.name = "aten::index", .overload = "Tensor"};
  plan.arguments.emplace_back(Layout({2, 3}, {3, 1}, 0));
  plan.arguments.emplace_back(
      rtd::OptionalTensorLayouts{std::nullopt, Layout({2}, {1}, 1, /*int64*/ 4)});
  plan.outputs.push_back(Layout({2, 2}, {2, 1}, 2));
  absl::StatusOr<uint64_t> id = session_->LoadEagerOp(plan);
  ASSERT_TRUE(id.ok()) << id.status();
  Upload(0, {1, 2, 3, 4, 5, 6});
  const int64_t index[] = {2, 0};
  ASSERT_TRUE(stream_->CopyToDevice(At(10), index, sizeof(index)).ok());
  const uint64_t addresses[] = {At(0), At(10), At(20)};
  ASSERT_TRUE(stream_->Launch(*id, addresses, {}).ok());
  EXPECT_EQ(Download(20, 4), (std::vector<float>{3, 1, 6, 4}));
}

TEST_F(ExecutableTest, FactoriesGetTheDaemonsDevice) {
  // aten::full(size, fill_value, dtype, layout, device, pin_memory).
  rtd::EagerOpPlan plan{.name = "aten::full", .overload = ""};
  plan.arguments.emplace_back(std::vector<int64_t>{3});
  plan.arguments.emplace_back(rtd::ImmediateScalar{.kind = rtd::ImmediateScalar::Kind::kDouble});
  plan.arguments.emplace_back(rtd::ScalarTypeValue{.dtype = 6});
  plan.arguments.emplace_back(rtd::NoneValue{});
  plan.arguments.emplace_back(rtd::DeviceValue{});
  plan.arguments.emplace_back(rtd::NoneValue{});
  plan.outputs.push_back(Layout({3}, {1}, 0));
  absl::StatusOr<uint64_t> id = session_->LoadEagerOp(plan);
  ASSERT_TRUE(id.ok()) << id.status();
  const double value = 7.5;
  const uint64_t addresses[] = {At(0)};
  ASSERT_TRUE(
      stream_->Launch(*id, addresses, std::span(reinterpret_cast<const uint8_t*>(&value), 8))
          .ok());
  EXPECT_EQ(Download(0, 3), (std::vector<float>{7.5, 7.5, 7.5}));
}

TEST_F(ExecutableTest, DefaultGeneratorIsSeededPerCall) {
  // native_dropout has no Generator argument: it draws from the default one.
  rtd::EagerOpPlan plan{.name = "aten::native_dropout", .overload = ""};
  plan.arguments.emplace_back(Layout({64}, {1}, 0));
  plan.arguments.emplace_back(0.5);
  plan.arguments.emplace_back(true);
  plan.outputs.push_back(Layout({64}, {1}, 1));
  plan.outputs.push_back(Layout({64}, {1}, 2, /*bool*/ 11));
  plan.default_generator = rtd::GeneratorSeed{.offset = 0};
  absl::StatusOr<uint64_t> id = session_->LoadEagerOp(plan);
  ASSERT_TRUE(id.ok()) << id.status();
  Upload(0, std::vector<float>(64, 1.0f));
  auto draw = [&](uint64_t seed) {
    const uint64_t addresses[] = {At(0), At(100), At(200)};
    EXPECT_TRUE(
        stream_->Launch(*id, addresses, std::span(reinterpret_cast<const uint8_t*>(&seed), 8))
            .ok());
    return Download(100, 64);
  };
  const std::vector<float> first = draw(42);
  EXPECT_EQ(draw(42), first);
  EXPECT_NE(draw(43), first);
}

TEST_F(ExecutableTest, ScalarListsBeyondAnyRecordAreRefused) {
  rtd::EagerOpPlan plan{.name = "aten::_foreach_mul_", .overload = "ScalarList"};
  plan.arguments.emplace_back(std::vector<rtd::TensorLayout>{Layout({2}, {1}, 0)});
  plan.arguments.emplace_back(rtd::ImmediateScalarList{
      .kind = rtd::ImmediateScalar::Kind::kDouble, .offset = 32000, .count = 100});
  absl::StatusOr<uint64_t> id = session_->LoadEagerOp(plan);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("beyond any record"));
}

TEST_F(ExecutableTest, InPlaceOpOnAStridedView) {
  // self is the transpose of a 2x3 matrix: sizes [3, 2], strides [1, 3].
  v1::EagerOp add_;
  add_.set_name("aten::add_");
  add_.set_overload("Tensor");
  *add_.add_arguments()->mutable_tensor() = Spec({3, 2}, {1, 3}, 0);
  *add_.add_arguments()->mutable_tensor() = Spec({3, 2}, {2, 1}, 1);
  add_.add_arguments()->set_double_value(1.0);
  const uint64_t id = *session_->LoadExecutable(Body(add_));
  Upload(0, {0, 1, 2, 3, 4, 5});           // [[0,1,2],[3,4,5]]
  Upload(10, {100, 200, 300, 400, 500, 600});  // added to the transposed view
  const uint64_t addresses[] = {At(0), At(10)};
  ASSERT_TRUE(stream_->Launch(id, addresses, {}).ok());
  // view[i][j] = m[j][i] += other[i][j]
  EXPECT_EQ(Download(0, 6), (std::vector<float>{100, 301, 502, 203, 404, 605}));
}

TEST_F(ExecutableTest, TheSameContentIsLoadedOncePerHost) {
  v1::EagerOp neg;
  neg.set_name("aten::neg");
  *neg.add_arguments()->mutable_tensor() = Spec({8}, {1}, 0);
  *neg.add_outputs() = Spec({8}, {1}, 1);
  const uint64_t first = *session_->LoadExecutable(Body(neg));
  auto other = *neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
  EXPECT_EQ(*other->LoadExecutable(Body(neg)), first);
  auto admin = v1::Admin::NewStub(
      grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::GetCacheInfoResponse cache;
  ASSERT_TRUE(admin->GetCacheInfo(&context, v1::GetCacheInfoRequest(), &cache).ok());
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_GE(cache.hits(), 1u);
}

TEST_F(ExecutableTest, TheCacheListingSaysHowManyHostThreadsAnExecutableUses) {
  v1::EagerOp neg;
  neg.set_name("aten::neg");
  *neg.add_arguments()->mutable_tensor() = Spec({8}, {1}, 0);
  *neg.add_outputs() = Spec({8}, {1}, 1);
  const uint64_t id = *session_->LoadExecutable(Body(neg));
  const uint64_t addresses[] = {At(0), At(10)};
  // Past the first check (every 64th launch), so that a first launch slowed
  // by the daemon's own start-up cannot decide.
  for (int launch = 0; launch < 66; ++launch) {
    ASSERT_TRUE(stream_->Launch(id, addresses, {}).ok());
  }
  ASSERT_TRUE(stream_->Synchronize().ok());
  auto admin = v1::Admin::NewStub(
      grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::GetCacheInfoRequest request;
  request.set_list_executables(true);
  v1::GetCacheInfoResponse cache;
  ASSERT_TRUE(admin->GetCacheInfo(&context, request, &cache).ok());
  ASSERT_EQ(cache.executables_size(), 1);
  // Eight floats: far below [sim] parallel_launch_min_us on one thread.
  EXPECT_EQ(cache.executables(0).host_threads(), 1u);
}

TEST_F(ExecutableTest, OperatorErrorsFailTheirCommandAndTheStreamGoesOn) {
  v1::EagerOp mm;
  mm.set_name("aten::mm");
  *mm.add_arguments()->mutable_tensor() = Spec({4, 3}, {3, 1}, 0);
  *mm.add_arguments()->mutable_tensor() = Spec({4, 2}, {2, 1}, 1);
  *mm.add_outputs() = Spec({4, 2}, {2, 1}, 2);
  const uint64_t id = *session_->LoadExecutable(Body(mm));
  const uint64_t addresses[] = {At(0), At(100), At(200)};
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "aten::mm").ok());
  absl::Status status = stream_->Synchronize();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("LAUNCH 'aten::mm'"));
  EXPECT_THAT(status.message(), HasSubstr("cannot be multiplied"));
  const auto type = status.GetPayload(neuronrt::kOperatorErrorTypePayload);
  ASSERT_TRUE(type.has_value());
  EXPECT_EQ(std::string(*type), "RuntimeError");
  EXPECT_FALSE(status.GetPayload(neuronrt::kStreamFaultPayload).has_value());
  // Reported once; the stream runs what comes next.
  EXPECT_TRUE(stream_->Synchronize().ok());
  Upload(0, {1, 2, 3, 4});
  EXPECT_EQ(Download(0, 4), (std::vector<float>{1, 2, 3, 4}));

  // Two failures before one synchronization: the first is reported, with a
  // count of the rest.
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "aten::mm").ok());
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "aten::mm").ok());
  status = stream_->Synchronize();
  EXPECT_THAT(status.message(), HasSubstr("and 1 later command(s)"));
  EXPECT_TRUE(stream_->Synchronize().ok());
}

TEST_F(ExecutableTest, IndexErrorsKeepTheirType) {
  v1::EagerOp select;
  select.set_name("aten::index_select");
  *select.add_arguments()->mutable_tensor() = Spec({4}, {1}, 0);
  select.add_arguments()->set_int_value(0);
  *select.add_arguments()->mutable_tensor() = Spec({1}, {1}, 1, v1::SCALAR_TYPE_INT64);
  *select.add_outputs() = Spec({1}, {1}, 2);
  const uint64_t id = *session_->LoadExecutable(Body(select));
  const int64_t index = 9;
  ASSERT_TRUE(stream_->CopyToDevice(At(100), &index, sizeof(index)).ok());
  const uint64_t addresses[] = {At(0), At(100), At(200)};
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "aten::index_select").ok());
  absl::Status status = stream_->Synchronize();
  const auto type = status.GetPayload(neuronrt::kOperatorErrorTypePayload);
  ASSERT_TRUE(type.has_value()) << status;
  EXPECT_EQ(std::string(*type), "IndexError");
}

TEST_F(ExecutableTest, UnknownOperatorsAndShortAddressesAreRefused) {
  v1::EagerOp unknown;
  unknown.set_name("aten::no_such_operator");
  *unknown.add_arguments()->mutable_tensor() = Spec({4}, {1}, 0);
  auto refused = session_->LoadExecutable(Body(unknown));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("no operator aten::no_such_operator"));

  v1::EagerOp neg;
  neg.set_name("aten::neg");
  *neg.add_arguments()->mutable_tensor() = Spec({1024}, {1}, 0);
  *neg.add_outputs() = Spec({1024}, {1}, 1);
  const uint64_t neg_id = *session_->LoadExecutable(Body(neg));
  const uint64_t past_end[] = {At(0), buffer_.device_address + buffer_.size - 16};
  ASSERT_TRUE(stream_->Launch(neg_id, past_end, {}).ok());
  absl::Status fault = stream_->Synchronize();
  EXPECT_THAT(fault.message(), HasSubstr("past the end of segment"));
  // Memory the session does not own is a fault: the stream stays failed.
  EXPECT_TRUE(fault.GetPayload(neuronrt::kStreamFaultPayload).has_value());
  EXPECT_FALSE(stream_->Synchronize().ok());

  auto third = *session_->CreateStream(0);
  ASSERT_TRUE(third->Launch(neg_id, std::span<const uint64_t>(past_end, 1), {}).ok());
  EXPECT_THAT(third->Synchronize().message(), HasSubstr("takes 2 addresses; the launch gave 1"));

  auto fourth = *session_->CreateStream(0);
  ASSERT_TRUE(fourth->Launch(5000, past_end, {}).ok());
  EXPECT_THAT(fourth->Synchronize().message(), HasSubstr("executable 5000 is not loaded in this session"));
}

// Each of these once reached ATen's boxed call unchecked; too few arguments
// made it read past its stack and killed the daemon.
TEST_F(ExecutableTest, ExecutablesThatDoNotFitTheSchemaAreRefusedAtLoad) {
  struct Case {
    std::string what;
    v1::EagerOp op;
    std::string message;
  };
  std::vector<Case> cases;
  {
    v1::EagerOp addmm;
    addmm.set_name("aten::addmm");
    *addmm.add_outputs() = Spec({2, 2}, {2, 1}, 0);
    cases.push_back({"no arguments", addmm, "argument 0 (self) is missing and has no default"});
  }
  {
    v1::EagerOp addmm;
    addmm.set_name("aten::addmm");
    *addmm.add_arguments()->mutable_tensor() = Spec({2, 2}, {2, 1}, 0);
    addmm.add_arguments()->set_int_value(3);
    cases.push_back({"an int for a tensor", addmm, "argument 1 (mat1) of type Tensor"});
  }
  {
    v1::EagerOp neg;
    neg.set_name("aten::neg");
    *neg.add_arguments()->mutable_tensor() = Spec({2}, {1}, 0);
    *neg.add_arguments()->mutable_tensor() = Spec({2}, {1}, 1);
    cases.push_back({"too many arguments", neg, "takes 1 arguments; the executable gives 2"});
  }
  {
    v1::EagerOp sum;
    sum.set_name("aten::sum");
    sum.set_overload("dim_IntList");
    *sum.add_arguments()->mutable_tensor() = Spec({2}, {1}, 0);
    sum.add_arguments()->mutable_int_list()->add_values(0);
    sum.add_arguments()->set_none(true);
    cases.push_back({"None for a bool", sum, "argument 2 (keepdim) of type bool cannot be None"});
  }
  {
    v1::EagerOp add;
    add.set_name("aten::add");
    add.set_overload("Tensor");
    *add.add_arguments()->mutable_tensor() = Spec({2}, {1}, 0);
    *add.add_arguments()->mutable_tensor() = Spec({2}, {1}, 1);
    add.add_arguments()->mutable_immediate()->set_kind(v1::ImmediateScalar::Kind(7));
    cases.push_back({"an unknown immediate kind", add, "immediate scalar of unknown kind 7"});
  }
  {
    v1::EagerOp backward;
    backward.set_name("aten::convolution_backward");
    for (int i = 0; i < 3; ++i) *backward.add_arguments()->mutable_tensor() = Spec({1}, {1}, i);
    backward.add_arguments()->set_none(true);
    for (int i = 0; i < 3; ++i) backward.add_arguments()->mutable_int_list()->add_values(1);
    backward.add_arguments()->set_bool_value(false);
    backward.add_arguments()->mutable_int_list()->add_values(0);
    backward.add_arguments()->set_int_value(1);
    backward.add_arguments()->mutable_bool_list()->add_values(true);
    cases.push_back({"a bool[3] of one", backward, "argument 10 (output_mask)"});
  }
  {
    v1::EagerOp neg;
    neg.set_name("aten::neg");
    *neg.add_arguments()->mutable_tensor() = Spec({2}, {1}, 0);
    *neg.add_outputs() = Spec({2}, {1}, 1);
    *neg.add_outputs() = Spec({2}, {1}, 2);
    cases.push_back({"more outputs than results", neg, "returns 1 tensors; the executable has 2"});
  }
  for (const Case& each : cases) {
    auto refused = session_->LoadExecutable(Body(each.op));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << each.what;
    EXPECT_THAT(refused.status().message(), HasSubstr(each.message)) << each.what;
  }
  // The daemon is still there, and the stream works.
  Upload(0, {5});
  EXPECT_EQ(Download(0, 1), std::vector<float>{5});
}

TEST_F(ExecutableTest, SchemaDefaultsFillMissingTrailingArguments) {
  v1::EagerOp sum;
  sum.set_name("aten::sum");
  sum.set_overload("dim_IntList");
  *sum.add_arguments()->mutable_tensor() = Spec({2, 2}, {2, 1}, 0);
  sum.add_arguments()->mutable_int_list()->add_values(1);
  *sum.add_outputs() = Spec({2}, {1}, 1);
  const uint64_t id = *session_->LoadExecutable(Body(sum));
  Upload(0, {1, 2, 3, 4});
  const uint64_t addresses[] = {At(0), At(100)};
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "aten::sum").ok());
  EXPECT_EQ(Download(100, 2), (std::vector<float>{3, 7}));
}

// Eval-mode batch norm on the CPU returns empty saved statistics where
// meta inference (and CUDA) give one value per channel.
TEST_F(ExecutableTest, EmptyAuxiliaryResultsLeaveTheirOutputs) {
  v1::EagerOp bn;
  bn.set_name("aten::native_batch_norm");
  *bn.add_arguments()->mutable_tensor() = Spec({1, 2, 1, 1}, {2, 1, 1, 1}, 0);
  bn.add_arguments()->set_none(true);
  bn.add_arguments()->set_none(true);
  *bn.add_arguments()->mutable_tensor() = Spec({2}, {1}, 1);
  *bn.add_arguments()->mutable_tensor() = Spec({2}, {1}, 2);
  bn.add_arguments()->set_bool_value(false);
  bn.add_arguments()->set_double_value(0.1);
  bn.add_arguments()->set_double_value(0.0);
  *bn.add_outputs() = Spec({1, 2, 1, 1}, {2, 1, 1, 1}, 3);
  *bn.add_outputs() = Spec({2}, {1}, 4);
  *bn.add_outputs() = Spec({2}, {1}, 5);
  const uint64_t id = *session_->LoadExecutable(Body(bn));
  Upload(0, {3, 5});
  Upload(100, {1, 1});  // running mean
  Upload(200, {4, 1});  // running var
  Upload(400, {-7, -7});
  const uint64_t addresses[] = {At(0), At(100), At(200), At(300), At(400), At(500)};
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "aten::native_batch_norm").ok());
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(Download(300, 2), (std::vector<float>{1, 4}));
  EXPECT_EQ(Download(400, 2), (std::vector<float>{-7, -7}));
}

// A backward whose output_mask skips grad_input: the result is undefined
// and has no output; a None for a Tensor argument is an undefined tensor.
TEST_F(ExecutableTest, UndefinedResultsHaveNoOutputs) {
  v1::EagerOp backward;
  backward.set_name("aten::convolution_backward");
  *backward.add_arguments()->mutable_tensor() = Spec({1, 1, 1, 1}, {1, 1, 1, 1}, 0);  // grad
  *backward.add_arguments()->mutable_tensor() = Spec({1, 1, 1, 1}, {1, 1, 1, 1}, 1);  // input
  *backward.add_arguments()->mutable_tensor() = Spec({1, 1, 1, 1}, {1, 1, 1, 1}, 2);  // weight
  backward.add_arguments()->mutable_int_list()->add_values(1);  // bias sizes
  for (int i = 0; i < 2; ++i) {
    auto* list = backward.add_arguments()->mutable_int_list();
    list->add_values(i == 0 ? 1 : 0);
    list->add_values(i == 0 ? 1 : 0);
  }
  auto* dilation = backward.add_arguments()->mutable_int_list();
  dilation->add_values(1);
  dilation->add_values(1);
  backward.add_arguments()->set_bool_value(false);
  auto* padding = backward.add_arguments()->mutable_int_list();
  padding->add_values(0);
  padding->add_values(0);
  backward.add_arguments()->set_int_value(1);
  auto* mask = backward.add_arguments()->mutable_bool_list();
  mask->add_values(false);
  mask->add_values(true);
  mask->add_values(true);
  backward.add_undefined_results(0);
  *backward.add_outputs() = Spec({1, 1, 1, 1}, {1, 1, 1, 1}, 3);
  *backward.add_outputs() = Spec({1}, {1}, 4);
  const uint64_t id = *session_->LoadExecutable(Body(backward));
  Upload(0, {2});
  Upload(100, {3});
  Upload(200, {5});
  const uint64_t addresses[] = {At(0), At(100), At(200), At(300), At(400)};
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "aten::convolution_backward").ok());
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(Download(300, 1), std::vector<float>{6});  // grad_weight = grad * input
  EXPECT_EQ(Download(400, 1), std::vector<float>{2});  // grad_bias = grad

  v1::EagerOp add;
  add.set_name("aten::add");
  add.set_overload("Tensor");
  add.add_arguments()->set_none(true);
  *add.add_arguments()->mutable_tensor() = Spec({1}, {1}, 0);
  *add.add_arguments()->mutable_immediate() = v1::ImmediateScalar();
  *add.add_outputs() = Spec({1}, {1}, 1);
  const uint64_t add_id = *session_->LoadExecutable(Body(add));
  const int64_t alpha = 1;
  const uint8_t* alpha_bytes = reinterpret_cast<const uint8_t*>(&alpha);
  ASSERT_TRUE(stream_->Launch(add_id, addresses, {alpha_bytes, 8}, "aten::add").ok());
  absl::Status status = stream_->Synchronize();
  EXPECT_THAT(status.message(), HasSubstr("undefined"));
  EXPECT_TRUE(status.GetPayload(neuronrt::kOperatorErrorTypePayload).has_value());
}

TEST_F(ExecutableTest, MalformedBodiesAreRefusedAtLoad) {
  v1::EagerOp bad_dtype;
  bad_dtype.set_name("aten::neg");
  *bad_dtype.add_arguments()->mutable_tensor() = Spec({4}, {1}, 0, v1::ScalarType(12));
  EXPECT_THAT(session_->LoadExecutable(Body(bad_dtype)).status().message(),
              HasSubstr("aten::neg argument 0: dtype 12 is not supported"));
  v1::EagerOp bad_rank;
  bad_rank.set_name("aten::neg");
  *bad_rank.add_arguments()->mutable_tensor() = Spec({4, 4}, {1}, 0);
  EXPECT_THAT(session_->LoadExecutable(Body(bad_rank)).status().message(),
              HasSubstr("2 sizes and 1 strides"));
  // PyTorch's operators take up to 64 dimensions; more is refused.
  v1::EagerOp deep;
  deep.set_name("aten::neg");
  *deep.add_arguments()->mutable_tensor() =
      Spec(std::vector<int64_t>(65, 1), std::vector<int64_t>(65, 1), 0);
  EXPECT_THAT(session_->LoadExecutable(Body(deep)).status().message(),
              HasSubstr("65 sizes and 65 strides (at most 64 dimensions)"));
  v1::EagerOp huge;
  huge.set_name("aten::neg");
  *huge.add_arguments()->mutable_tensor() = Spec({1 << 30, 1 << 30}, {1 << 30, 1}, 0);
  EXPECT_THAT(session_->LoadExecutable(Body(huge)).status().message(), HasSubstr("256 TiB"));
  v1::EagerOp python;
  python.set_name("builtins::exec");
  EXPECT_THAT(session_->LoadExecutable(Body(python)).status().message(),
              HasSubstr("not an ATen or prims operator"));
  EXPECT_EQ(session_->LoadExecutable("\xff\xff garbage").status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::EagerOp from_file;
  from_file.set_name("aten::from_file");
  from_file.add_arguments()->set_string_value("/etc/shadow");
  auto refused = session_->LoadExecutable(Body(from_file));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("touches host files"));

  // Protobuf would log each of these on the daemon's stderr: any client
  // could flood the journal.
  v1::EagerOp not_utf8;
  not_utf8.set_name("aten::neg");
  std::string body = Body(not_utf8);
  body.replace(body.find("neg"), 3, "\xff\xfe\xfd");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(session_->LoadExecutable(body).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_THAT(daemon_->Stderr(), ::testing::Not(HasSubstr("libprotobuf")));
}

TEST_F(ExecutableTest, ABodyMustMatchItsHash) {
  auto runtime = v1::Runtime::NewStub(
      grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::LoadExecutableResponse response;
  auto writer = runtime->LoadExecutable(&context, &response);
  v1::LoadExecutableChunk chunk;
  chunk.mutable_header()->set_session_id(session_->id());
  chunk.mutable_header()->set_kind(v1::EXECUTABLE_KIND_EAGER_OP);
  chunk.mutable_header()->set_content_hash(std::string(32, '0'));
  chunk.mutable_header()->set_total_bytes(4);
  chunk.set_data("abcd");
  writer->Write(chunk);
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  // This connection's peer (this process) owns the session.
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("does not match"));
}

// Each LoadExecutable may buffer up to 256 MiB: one user's loads in flight
// may announce 512 MiB in all, so that a client cannot make the daemon hold
// gigabytes.
TEST_F(ExecutableTest, BytesOfConcurrentLoadsOfOneUserAreCapped) {
  auto runtime = v1::Runtime::NewStub(
      grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  v1::LoadExecutableChunk header;
  header.mutable_header()->set_session_id(session_->id());
  header.mutable_header()->set_kind(v1::EXECUTABLE_KIND_EAGER_OP);
  header.mutable_header()->set_content_hash(std::string(32, '0'));
  header.mutable_header()->set_total_bytes(256 << 20);
  struct Load {
    grpc::ClientContext context;
    v1::LoadExecutableResponse response;
    std::unique_ptr<grpc::ClientWriter<v1::LoadExecutableChunk>> writer;
  };
  std::vector<std::unique_ptr<Load>> open;
  auto start = [&] {
    auto load = std::make_unique<Load>();
    load->writer = runtime->LoadExecutable(&load->context, &load->response);
    load->writer->Write(header);
    return load;
  };
  for (int i = 0; i < 2; ++i) open.push_back(start());
  // The daemon admits a call once it has read its header, after Write()
  // returned: start more until one is refused.
  grpc::Status refused;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    std::unique_ptr<Load> extra = start();
    extra->writer->WritesDone();
    grpc::Status status = extra->writer->Finish();
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      refused = status;
      break;
    }
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("per user"));
  for (auto& load : open) {
    load->writer->WritesDone();
    EXPECT_EQ(load->writer->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  // Their slots are free again.
  v1::EagerOp neg;
  neg.set_name("aten::neg");
  *neg.add_arguments()->mutable_tensor() = Spec({2}, {1}, 0);
  *neg.add_outputs() = Spec({2}, {1}, 1);
  EXPECT_TRUE(session_->LoadExecutable(Body(neg)).ok());
}

TEST_F(ExecutableTest, AStoppingDaemonFinishesCallsInFlight) {
  v1::EagerOp neg;
  neg.set_name("aten::neg");
  *neg.add_arguments()->mutable_tensor() = Spec({8}, {1}, 0);
  *neg.add_outputs() = Spec({8}, {1}, 1);
  const std::string body = Body(neg);
  auto runtime = v1::Runtime::NewStub(
      grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::LoadExecutableResponse response;
  auto writer = runtime->LoadExecutable(&context, &response);
  v1::LoadExecutableChunk header;
  header.mutable_header()->set_session_id(session_->id());
  header.mutable_header()->set_kind(v1::EXECUTABLE_KIND_EAGER_OP);
  header.mutable_header()->set_content_hash(rtd::ContentHash(body));
  header.mutable_header()->set_total_bytes(body.size());
  ASSERT_TRUE(writer->Write(header));
  // Write() returns once the message is buffered, perhaps before the daemon
  // has seen the call, and a daemon can only finish the calls it has
  // received. A call on the same connection answered afterwards means the
  // daemon has taken in the stream opened before it.
  {
    grpc::ClientContext info_context;
    v1::GetRuntimeInfoResponse info;
    ASSERT_TRUE(runtime->GetRuntimeInfo(&info_context, v1::GetRuntimeInfoRequest(), &info).ok());
  }

  daemon_->Signal(SIGTERM);
  // The daemon removes its socket as it stops accepting: from then on this
  // call is one it must let finish.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (::access(socket_.c_str(), F_OK) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_NE(::access(socket_.c_str(), F_OK), 0) << "the daemon did not start stopping";
  v1::LoadExecutableChunk data;
  data.set_data(body);
  ASSERT_TRUE(writer->Write(data));
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_GE(response.executable_id(), NEURON_RTD_FIRST_LOADED_EXECUTABLE);
  absl::StatusOr<int> code = daemon_->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace neuron
