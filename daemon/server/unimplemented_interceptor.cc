#include "daemon/server/unimplemented_interceptor.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "neuron/version.h"

namespace neuron::rtd {
namespace {

class UnimplementedInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit UnimplementedInterceptor(std::string method) : method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
          status.error_message().empty()) {
        // gRPC names a method it has no handler for "unknown".
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::UNIMPLEMENTED,
            method_ == "unknown"
                ? absl::StrCat("the method called is not served by neuron-rtd ",
                               NEURON_RTD_VERSION, " (is the client newer than the daemon?)")
                : absl::StrCat(method_, " is not implemented by neuron-rtd ",
                               NEURON_RTD_VERSION)));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
};

}  // namespace

grpc::experimental::Interceptor* UnimplementedInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  // "/neuron.rtd.v1.Admin/KillSession" -> "neuron.rtd.v1.Admin/KillSession"
  return new UnimplementedInterceptor(std::string(absl::StripPrefix(info->method(), "/")));
}

}  // namespace neuron::rtd
