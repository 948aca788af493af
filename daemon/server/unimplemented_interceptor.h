// Gives UNIMPLEMENTED answers a message that names the method and the
// daemon's version. gRPC's generated base classes answer methods that have
// no handler with an empty message, which tells a user nothing.
#ifndef NEURON_RTD_DAEMON_SERVER_UNIMPLEMENTED_INTERCEPTOR_H_
#define NEURON_RTD_DAEMON_SERVER_UNIMPLEMENTED_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

namespace neuron::rtd {

class UnimplementedInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_UNIMPLEMENTED_INTERCEPTOR_H_
