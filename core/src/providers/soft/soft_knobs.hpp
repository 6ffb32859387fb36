// Knobs of the soft RNIC: what NDK_ADAPTER_INFO it reports, how many objects it allows, its
// addresses, its engine's progress and timeouts.  Knobs are set as text key/value pairs, at
// miniport creation and at run time through the harness control entry (see
// core/include/ndk/provider.h), so any front end can drive them.  The test knobs that act at
// the ABI edge (`fail`, `hold`, the completion modes, most `misbehave` names) are the fault
// layer's, stacked over every provider (core/src/layers/fault/); the soft provider completes
// every call inline that NDK does not make pend.  A knob never makes the provider break the
// contract (digest 1.0), except `misbehave` (soft_misbehave.hpp), for the names that need the
// provider's internals.
#pragma once

#include "ndk/ndkpi.h"
#include "soft_misbehave.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <string>
#include <vector>
#include <utility>

namespace ndk::soft {

struct ObjectCaps { // NDIS_NDK_CAPABILITIES counts; 0 means no cap
    ULONG max_qp = 0, max_cq = 0, max_mr = 0, max_pd = 0, max_mw = 0, max_srq = 0;
};

// What the knobs hold: set() writes it, the provider reads it through Knobs (under its lock,
// except `misbehave`, which the data path reads lock-free).
// What carries an adapter's connections (knob transport; docs/transport.md).
enum class TransportKind { inproc, shm, tcp };

struct KnobValues {
    NDK_ADAPTER_INFO info{};
    ObjectCaps caps{};
    std::optional<NDK_VERSION> provider_version; // restricts to one major when set
    bool adapter_not_ready = false;
    std::pair<uint16_t, uint16_t> ephemeral{49152, 65535};
    std::string addresses;
    TransportKind transport = TransportKind::inproc; // at open only: docs/transport.md
    std::string shm_fabric;     // shm_fabric=NAME: which host-wide registry (empty: the default)
    bool mpa_crc = true;        // transport=tcp: ask for MPA's CRC32c (docs/semantics.md TCP-CRC)
    bool manual_progress = false;
    uint32_t rnr_timeout_ms = 100;
    uint32_t connect_timeout_ms = 10000;
    uint32_t mpa_request_timeout_ms = 10000; // transport=tcp: docs/semantics.md TCP-LISTENER
    // sge_check=completion: too many SGEs in an initiator request is found when it executes
    // (docs/semantics.md ND-LOCAL-LENGTH); read on the data path, so lock-free.
    std::atomic<bool> sge_check_at_completion{false};
    // flag_check=completion: a flag bit the request does not document is found when it
    // executes (docs/semantics.md ND-INVALID-REQUEST); read on the data path, so lock-free.
    std::atomic<bool> flag_check_at_completion{false};
    // link_end=held: the tcp transport takes a link's end without acting on it
    // (docs/semantics.md LINK-END); read by its thread as the end comes, so lock-free.
    std::atomic<bool> link_end_held{false};
    std::atomic<Misbehave> misbehave{Misbehave::None};
};

// Who acts a knob: the soft provider, or both it and the fault layer stacked over it (`knobs`:
// each lists its own).  The layer's own knobs are in its table
// (core/src/layers/fault/fault_knob_table.cpp).
enum class KnobBy { Provider, Both };

// One row of the knob table (soft_knob_table.cpp): the knobs it covers, who acts them, what
// docs/knobs.md says of them, and how a value is parsed and printed.  The table is the one
// place a knob of the provider is documented: set(), get(), the `knobs` listing and
// docs/knobs.md's rows after the fault layer's all come from it.
using KnobSet = std::string (*)(KnobValues &, std::string_view name, const std::string &value);
using KnobGet = std::string (*)(const KnobValues &, std::string_view name);
struct KnobSpec {
    const char *names;  // the knob names, space-separated; "" for the NDK_ADAPTER_INFO fields
    KnobBy by;          // who acts them
    const char *title;  // docs/knobs.md's first column when it is not the names
    const char *values; // what a value is
    const char *effect; // what it does
    KnobSet set;        // returns "" or why the value is refused; nullptr: not set here
    KnobGet get;        // nullptr: not read here (write only, or the provider entry's knob)
};
std::span<const KnobSpec> knob_table();
// Whether `spec` is the row of knob `name`.
bool covers(const KnobSpec &spec, std::string_view name);
// Every knob name of the rows `by` (Provider: the soft provider's own, the `knobs` knob), in
// the table's order.
std::vector<std::string> knob_names(KnobBy by = KnobBy::Provider);
// The table's rows of docs/knobs.md's knob table (after the fault layer's).
std::string knob_table_markdown();
NDK_ADAPTER_INFO default_adapter_info();

// What the data path reads of the knobs, published as atomics whenever a knob is set, so a
// post or a transfer takes no mutex for them (the rest of the knobs are read under Knobs' lock,
// on the control path).  Relaxed: each field stands alone, a post racing a knob change may see
// either value, as it would see the change just before or just after.
struct DataPathKnobs {
    std::atomic<ULONG> max_transfer_length{0};
    std::atomic<ULONG> max_read_request_sge{0};
    std::atomic<SIZE_T> max_window_size{0};
    std::atomic<ULONG> adapter_flags{0};
    std::atomic<bool> manual_progress{false};
    std::atomic<uint32_t> rnr_timeout_ms{0};

    ULONG max_transfer() const { return max_transfer_length.load(std::memory_order_relaxed); }
    ULONG max_read_sge() const { return max_read_request_sge.load(std::memory_order_relaxed); }
    SIZE_T max_window() const { return max_window_size.load(std::memory_order_relaxed); }
    bool has_flag(ULONG flag) const
    {
        return (adapter_flags.load(std::memory_order_relaxed) & flag) == flag;
    }
};

class Knobs {
public:
    Knobs();

    // Set one knob from text.  Returns STATUS_SUCCESS, STATUS_NOT_SUPPORTED for an unknown key,
    // or STATUS_INVALID_PARAMETER with `error` explaining the bad value.
    NTSTATUS set(const std::string &key, const std::string &value, std::string &error);
    // Read one knob as text; STATUS_NOT_SUPPORTED for an unknown key.
    NTSTATUS get(const std::string &key, std::string &value) const;
    // Apply "key=value" lines (or ';'-separated pairs).
    NTSTATUS apply(const std::string &options, std::string &error);

    NDK_ADAPTER_INFO adapter_info(NDK_VERSION reported) const;
    ObjectCaps caps() const;
    // The provider's highest minor version for a major version; nullopt if the major is unknown.
    std::optional<USHORT> highest_minor(USHORT major) const;
    bool adapter_not_ready() const;
    std::pair<uint16_t, uint16_t> ephemeral_ports() const;
    std::string addresses() const;
    // transport=shm: connections go through the host's shm registry, to any process
    // (docs/transport.md); otherwise only to adapters of this process (inproc).
    bool shm_transport() const;
    // transport=tcp: every connection is a kernel TCP connection speaking iWARP (MPA, DDP,
    // RDMAP) from the adapter's addresses, which must be this host's (docs/iwarp.md).
    bool tcp_transport() const;
    // Neither shm nor tcp: connections only within this process.
    bool inproc_transport() const;
    // shm_fabric=NAME: the registry the shm transport uses (docs/transport.md, "Addresses"):
    // adapters meet only within one; empty for the user's default one.
    std::string shm_fabric() const;
    // mpa_crc: whether this adapter's MPA request or reply asks for CRC32c (RFC 5044 7.1; the
    // connection has CRC when either side asks).
    bool mpa_crc() const;
    // progress=manual: the engine runs only when stepped (docs/knobs.md, "Progress").
    bool manual_progress() const;
    // How long a send waits for a receive at the peer before it fails (receiver not ready).
    std::chrono::milliseconds rnr_timeout() const;
    // How long connection establishment waits for the peer's Accept / CompleteConnect.
    std::chrono::milliseconds connect_timeout() const;
    // transport=tcp: how long an accepted TCP connection has to send its whole MPA request
    // before the listener drops it (docs/semantics.md TCP-LISTENER).
    std::chrono::milliseconds mpa_request_timeout() const;
    // Whether an initiator request with more SGEs than the QP allows is posted and completed
    // STATUS_DATA_OVERRUN (knob sge_check=completion) rather than refused inline.
    bool sge_check_at_completion() const
    {
        return v_.sge_check_at_completion.load(std::memory_order_relaxed);
    }
    // Whether an initiator request carrying a flag bit it does not document is posted and
    // completed STATUS_INVALID_PARAMETER (knob flag_check=completion) rather than refused inline.
    bool flag_check_at_completion() const
    {
        return v_.flag_check_at_completion.load(std::memory_order_relaxed);
    }
    // Whether the tcp transport leaves a link's end unacted on (knob link_end=held), so that
    // the next request on the connection meets the ended link.
    bool link_end_held() const { return v_.link_end_held.load(std::memory_order_relaxed); }
    // The contract rule the provider breaks on purpose; read on the data path, so lock-free.
    Misbehave misbehave() const { return v_.misbehave.load(std::memory_order_relaxed); }
    // The data path's knobs, lock-free.
    const DataPathKnobs &data_path() const { return data_path_; }

private:
    void publish(); // mu_ held: copy what the data path reads into data_path_

    mutable std::mutex mu_;
    KnobValues v_;
    DataPathKnobs data_path_;
};

} // namespace ndk::soft
