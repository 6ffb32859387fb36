// Connection establishment and teardown between two soft connectors (digest 1.8, 3.5, 3.6;
// docs/semantics.md, CONN-*).  The connector's dispatch functions are split between
// soft_connector.cpp (Connect, ConnectWithSharedEndpoint, addresses, GetConnectionData) and
// soft_connection.cpp (Accept, Reject, CompleteConnect, Disconnect, and what a close or an
// error does to a connection).  Lock held for the helpers below.
#pragma once

#include "soft_objects.hpp"

namespace ndk::soft {

// NDK_FN_DISCONNECT_EVENT_CALLBACK_EX's ProviderDisconnectReason (0 would mean "not
// provided", digest 1.11).
constexpr ULONG kDisconnectGraceful = 1; // the peer called NdkDisconnect
constexpr ULONG kDisconnectAbortive = 2; // the peer closed its connector without disconnecting
constexpr ULONG kDisconnectError = 3;    // an error completion ended the connection

// End an established connection from `local`'s side: both connectors are disconnected, both
// QPs unlinked, and the peer gets its disconnect event with `reason`.
void end_connection(SoftConnector &local, ULONG reason);
// An error completion on local's QP ended the connection (soft_transfer.cpp).
void connection_terminated(SoftConnector &local);
// Arm the establishment timeout (knob connect_timeout_ms) of a connector.
void start_establishment_timer(SoftConnector &connector);
void stop_establishment_timer(SoftConnector &connector);

// The dispatch functions of soft_connection.cpp.
NTSTATUS accept(NDK_CONNECTOR *, NDK_QP *, ULONG, ULONG, const PVOID, ULONG,
                NDK_FN_DISCONNECT_EVENT_CALLBACK, PVOID, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS accept_ex(NDK_CONNECTOR *, NDK_QP *, ULONG, ULONG, const PVOID, ULONG,
                   NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, PVOID, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS reject(NDK_CONNECTOR *, const PVOID, ULONG);
NTSTATUS complete_connect(NDK_CONNECTOR *, NDK_FN_DISCONNECT_EVENT_CALLBACK, PVOID,
                          NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS complete_connect_ex(NDK_CONNECTOR *, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, PVOID,
                             NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS disconnect(NDK_CONNECTOR *, NDK_FN_REQUEST_COMPLETION, PVOID);

} // namespace ndk::soft
