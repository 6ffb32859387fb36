// STATUS-UNDOCUMENTED: the status codes each function's reference page documents (digest
// sections 1.1-1.10, the "Status codes" columns).  Every page also allows "other" codes, so a
// status outside its set is a warning, not an error.
#include "layers/validate/layer.hpp"

#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace ndk::validate {

namespace {

struct Documented {
    const char *function;
    std::initializer_list<NTSTATUS> statuses;
};

// SUCCESS is documented everywhere; PENDING for every asynchronous call; the rest per page.
const Documented kDocumented[] = {
    {"NdkQueryExtension", {STATUS_NOT_SUPPORTED}},
    {"NdkQueryAdapterInfo", {STATUS_BUFFER_TOO_SMALL}},
    {"NdkCreateCq", {STATUS_PENDING, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkCreatePd", {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkCreateSharedEndpoint",
     {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES, STATUS_SHARING_VIOLATION,
      STATUS_TOO_MANY_ADDRESSES, STATUS_INVALID_ADDRESS}},
    {"NdkCreateConnector", {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkCreateListener", {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkBuildLAM",
     {STATUS_PENDING, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES,
      STATUS_BUFFER_TOO_SMALL}},
    {"NdkCreateMr", {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkCreateMw", {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkCreateSrq", {STATUS_PENDING, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkCreateQp", {STATUS_PENDING, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkCreateQpWithSrq",
     {STATUS_PENDING, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkResizeCq", {STATUS_PENDING, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkControlCqInterruptModeration",
     {STATUS_INSUFFICIENT_RESOURCES, STATUS_NOT_SUPPORTED, STATUS_INVALID_PARAMETER_MIX}},
    {"NdkRegisterMr", {STATUS_PENDING, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES}},
    {"NdkDeregisterMr", {STATUS_PENDING}},
    {"NdkInitializeFastRegisterMr", {STATUS_PENDING, STATUS_IMPLEMENTATION_LIMIT}},
    {"NdkModifySrq", {STATUS_PENDING, STATUS_INVALID_PARAMETER}},
    {"NdkSrqReceive", {}},
    {"NdkReceive", {}},
    {"NdkSend", {STATUS_CONNECTION_INVALID}},
    {"NdkSendAndInvalidate", {STATUS_CONNECTION_INVALID}},
    {"NdkWrite", {STATUS_CONNECTION_INVALID}},
    {"NdkInvalidate", {STATUS_CONNECTION_INVALID}},
    {"NdkBind", {STATUS_CONNECTION_INVALID, STATUS_ACCESS_VIOLATION}},
    {"NdkFastRegister", {STATUS_CONNECTION_INVALID, STATUS_ACCESS_VIOLATION}},
    {"NdkRead", {STATUS_CONNECTION_INVALID, STATUS_REMOTE_RESOURCES}},
    {"NdkConnect",
     {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES, STATUS_NETWORK_UNREACHABLE,
      STATUS_HOST_UNREACHABLE, STATUS_CONNECTION_REFUSED, STATUS_IO_TIMEOUT,
      STATUS_SHARING_VIOLATION, STATUS_INVALID_ADDRESS, STATUS_TOO_MANY_ADDRESSES,
      STATUS_ADDRESS_ALREADY_EXISTS}},
    {"NdkConnectWithSharedEndpoint",
     {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES, STATUS_NETWORK_UNREACHABLE,
      STATUS_HOST_UNREACHABLE, STATUS_CONNECTION_REFUSED, STATUS_IO_TIMEOUT,
      STATUS_ADDRESS_ALREADY_EXISTS}},
    {"NdkCompleteConnect",
     {STATUS_PENDING, STATUS_CONNECTION_INVALID, STATUS_CONNECTION_ABORTED, STATUS_IO_TIMEOUT}},
    {"NdkCompleteConnectEx",
     {STATUS_PENDING, STATUS_CONNECTION_INVALID, STATUS_CONNECTION_ABORTED, STATUS_IO_TIMEOUT}},
    {"NdkAccept", {STATUS_PENDING, STATUS_CONNECTION_ABORTED, STATUS_IO_TIMEOUT}},
    {"NdkAcceptEx", {STATUS_PENDING, STATUS_CONNECTION_ABORTED, STATUS_IO_TIMEOUT}},
    {"NdkReject", {STATUS_CONNECTION_ABORTED}},
    {"NdkGetConnectionData", {STATUS_BUFFER_TOO_SMALL}},
    {"NdkGetLocalAddress", {STATUS_BUFFER_TOO_SMALL}},
    {"NdkGetPeerAddress", {STATUS_BUFFER_TOO_SMALL}},
    {"NdkDisconnect", {STATUS_PENDING, STATUS_IO_TIMEOUT}},
    {"NdkListen",
     {STATUS_PENDING, STATUS_INSUFFICIENT_RESOURCES, STATUS_SHARING_VIOLATION,
      STATUS_INVALID_ADDRESS, STATUS_TOO_MANY_ADDRESSES}},
};

bool is_close(const char *function) { return std::strncmp(function, "NdkClose", 8) == 0; }

} // namespace

void check_documented(const Shadow *object, LayerAdapter &adapter, const char *function,
                      NTSTATUS status)
{
    if (status == STATUS_SUCCESS)
        return;
    if (is_close(function)) {
        if (status == STATUS_PENDING)
            return;
    } else {
        for (const Documented &entry : kDocumented)
            if (std::strcmp(entry.function, function) == 0) {
                for (NTSTATUS documented : entry.statuses)
                    if (documented == status)
                        return;
                break;
            }
    }
    char text[96];
    std::snprintf(text, sizeof text, "returned 0x%08X, not among the statuses its page documents",
                  static_cast<unsigned>(status));
    adapter.report("STATUS-UNDOCUMENTED", object ? object->name() : "adapter", function, text);
}

} // namespace ndk::validate
