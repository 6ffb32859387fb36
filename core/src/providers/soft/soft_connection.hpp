// Connection establishment and teardown between two soft connectors (digest 1.8, 3.5, 3.6;
// docs/semantics.md, CONN-*).  The connector's dispatch functions are split between
// soft_connector.cpp (Connect, ConnectWithSharedEndpoint, addresses, GetConnectionData) and
// soft_connection.cpp (Accept, Reject, CompleteConnect, Disconnect, and what a close or an
// error does to a connection).  Lock held for the helpers below.
#pragma once

#include "soft_objects.hpp"

#include <optional>
#include <span>

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
// The other side's events (soft_connector_link.hpp), as this connector takes them.
// The reply reached the active side: its Connect completes (the limits are the passive side's).
void on_reply(SoftConnector &active, std::span<const unsigned char> private_data,
              ULONG peer_inbound_read_limit, ULONG peer_outbound_read_limit);
// The passive side rejected (private data from NdkReject) or closed (none): REFUSED.
void on_rejected(SoftConnector &active, std::optional<std::span<const unsigned char>> private_data);
// The active side completed the connection: the passive side is connected, its Accept completes.
void on_ready_to_use(SoftConnector &passive);
// The active side refused the reply: the passive side's Accept fails (CONNECTION_ABORTED).
void on_reply_refused(SoftConnector &passive);
// The other side gave up establishment; this side finds out when it next acts.
void on_abandoned(SoftConnector &c);
// The connection ended at the other side for `reason`: disconnected, the event delivered.
void on_disconnected(SoftConnector &c, ULONG reason);
// This side's connector and QP become connected (counted in the miniport's counters); the
// transport has given the QP its channel.
void established(SoftConnector &c);

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
