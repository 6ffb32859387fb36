// ndk_stress (docs/stress.md): threads drive connected QP pairs between two adapters of one
// process with every request type for a bounded time.  Every byte a request moves is checked
// against a pattern derived from the request's id and offset, and every completion is matched
// to the one request it completes.  The model shared by setup (world.cpp), the threads
// (driver.cpp) and the command (ndk_stress.cpp).
#pragma once

#include "ndk/lam.hpp"
#include "ndk/objects.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace stress {

using Clock = std::chrono::steady_clock;

// What a request is: part of its id (so a receive knows what kind of send it got), and a row
// of the summary.
enum class Op : uint8_t {
    Send,
    SendSolicit,
    SendInline,
    SendInvalidate,
    Write,
    Read,
    MwWrite,
    MwRead,
    FrWrite,
    FrRead,
    Bind,
    FastRegister,
    InvalidateMw,
    InvalidateFr,
    Receive,
    SrqReceive,
    ReadOnlyArea, // not a request: the id of the bytes an end's peer reads
    Count
};
inline constexpr size_t kOps = static_cast<size_t>(Op::Count);
const char *op_name(Op op);
inline bool is_send(Op op) { return op <= Op::SendInvalidate; }

// What --ops can leave out.
enum Feature : unsigned {
    kSend = 1u << 0,
    kSolicit = 1u << 1,
    kInline = 1u << 2,
    kSendInvalidate = 1u << 3,
    kWrite = 1u << 4,
    kRead = 1u << 5,
    kMw = 1u << 6,
    kFr = 1u << 7,
    kSrq = 1u << 8,
    kAllFeatures = (1u << 9) - 1,
};
// "send,solicit,...": nullopt names an unknown feature.
std::optional<unsigned> parse_features(const std::string &list);
std::string feature_names(unsigned features);

enum class Mode { Owned, Split, Mixed };

struct Config {
    std::string provider = "soft";
    std::string options; // adapter options, "key=value" lines or ';'-separated
    std::vector<std::string> addresses; // the two adapters' addresses; empty: their own
    int threads = 2;
    int connections = 4; // per thread
    double seconds = 3;
    double drain_seconds = 60;
    uint64_t seed = 1;
    bool validate = false;
    Mode mode = Mode::Mixed;
    uint32_t max_size = 4096;
    unsigned features = kAllFeatures;
};

// What the adapters allow, capped by what the run needs; fixed once the adapters are open.
struct Limits {
    uint32_t max_size = 0;     // longest message, write or read
    uint32_t inline_size = 0;  // the QPs' InlineDataSize (below 8: no inline sends)
    uint32_t initiator_sge = 0, receive_sge = 0, read_sge = 0;
    uint32_t initiator_depth = 0, receive_depth = 0, srq_depth_per_end = 0;
    uint32_t read_limit = 0;   // inbound and outbound read limit asked at connect
    uint32_t fr_pages = 0;     // pages of a fast-register window
    uint32_t slot_bytes = 0;   // a buffer slot: max_size and the gaps between SGEs
    unsigned features = 0;     // Config::features less what the adapter cannot do
};

// A request's id, also the first 8 bytes of what it moves: the connection, the initiator's
// side, the op and a sequence number.
namespace id {
inline uint64_t make(uint32_t connection, int side, Op op, uint64_t seq)
{
    return uint64_t{connection} << 48 | uint64_t(side & 1) << 47 |
           uint64_t(static_cast<uint8_t>(op)) << 42 | (seq & ((uint64_t{1} << 42) - 1));
}
inline uint32_t connection(uint64_t id) { return static_cast<uint32_t>(id >> 48); }
inline int side(uint64_t id) { return static_cast<int>((id >> 47) & 1); }
inline Op op(uint64_t id) { return static_cast<Op>((id >> 42) & 31); }
inline uint64_t seq(uint64_t id) { return id & ((uint64_t{1} << 42) - 1); }
} // namespace id

inline constexpr uint8_t kPoison = 0xA5; // what no request wrote
inline constexpr uint32_t kGap = 16;     // poison between the SGEs of one slot
inline constexpr uint32_t kMaxPieces = 3;
// Per end: slots its sends and writes come from, slots its reads land in, and slots of its
// write area (in the peer's memory) it writes to; each is busy from the post to the
// completion, so they bound what an end has in flight.
inline constexpr int kSources = 8, kSinks = 8, kTargets = 4;

// Byte `offset` of what request `id` moves is byte offset % 8 of word offset / 8: word 0 is
// the id itself, so a receive can name the send it got; the rest a hash of (id, word).
uint64_t pattern_word(uint64_t id, uint64_t word);
// The length request `id` moves: mostly short, sometimes up to max_size; an inline send fits
// the QP's InlineDataSize.  The receiver computes it again to check BytesTransferred.
uint32_t length_of(uint64_t id, const Limits &limits);

struct Mismatch {
    size_t at = 0;     // offset of the first wrong byte
    unsigned got = 0, want = 0;
    size_t count = 0;  // wrong bytes in all
};
void fill(uint8_t *to, uint64_t id, uint64_t start, size_t n);
std::optional<Mismatch> check(const uint8_t *at, uint64_t id, uint64_t start, size_t n);
std::optional<Mismatch> check_poison(const uint8_t *at, size_t n);

// SGEs inside one slot: up to kMaxPieces pieces, kGap bytes of poison between them.
struct Layout {
    struct Piece {
        uint32_t offset = 0, length = 0;
    };
    std::array<Piece, kMaxPieces> pieces{};
    uint32_t count = 0;
};

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next();
    uint32_t below(uint64_t n) { return static_cast<uint32_t>(next() % n); }

private:
    uint64_t state_;
};

// `length` bytes split into 1..max_pieces pieces at random cuts.
Layout scatter(Rng &rng, uint32_t length, uint32_t max_pieces);

// Page-aligned bytes, all poison at first; shared with the MR that registers them.
struct Memory {
    std::shared_ptr<uint8_t> bytes;
    size_t size = 0;
    uint8_t *at(size_t offset) const { return bytes.get() + offset; }
    uint64_t address(size_t offset = 0) const
    {
        return reinterpret_cast<uintptr_t>(bytes.get()) + offset;
    }
    static Memory allocate(size_t size);
};

// Receives one side posted, as credits for the senders into them: a receiver adds one per
// receive posted, a sender takes one per send, so no send ever waits for a receive.  Once
// `final` is set the receiver posts no more, and the senders drain the rest.
struct Pool {
    std::atomic<int64_t> credits{0};
    std::atomic<bool> final{false};
    bool take();
};

// An MW or fast-register MR of one end, which its peer writes and reads through.  The owner
// registers it (Bind or FastRegister) and publishes it; the user writes and reads it back one
// to three times, then gives it back: Released (the owner posts Invalidate) or
// RemoteInvalidating (the user's SendAndInvalidate invalidates it at the owner).  `state` is
// the one field both threads write; the rest is written by the owner before it publishes.
struct Window {
    enum State : int { Idle, Registering, Published, Released, RemoteInvalidating, Invalidating };
    std::atomic<int> state{Idle};
    bool is_mw = true;
    uint32_t token = 0;
    uint64_t address = 0;    // the window's first byte as the peer names it
    uint8_t *memory = nullptr; // the host bytes behind it
    uint32_t length = 0;
    uint64_t registrations = 0;
    // the owner's objects
    std::shared_ptr<ndk::Mw> mw;
    std::shared_ptr<ndk::Mr> fr;
    std::shared_ptr<ndk::Lam> lam;
    std::vector<NDK_LOGICAL_ADDRESS> pages;
    Memory fr_memory;
    // the user's use of it (the user's thread only)
    struct Use {
        enum Next { Write, Read, GiveBack };
        bool active = false, in_flight = false;
        int uses_left = 0;
        Next next = Write;
        uint32_t offset = 0, length = 0;
        uint64_t written = 0; // the id of the last write through it
    } use;
};

struct Req {
    uint32_t gen = 0; // 0: free
    Op op{};
    uint64_t id = 0;
    uint32_t length = 0;
    int slot = -1;          // source, receive or sink slot
    int target = -1;        // write: the slot of the peer's write area
    uint64_t remote_offset = 0; // write: in the target slot; read: in the peer's read-only
                                // area; window ops: in the window
    uint64_t source_id = 0;     // read: the id of the bytes it reads
    Layout layout;
    Window *window = nullptr;
    Clock::time_point posted;
};

struct Driver;
struct End;
struct Group;

// The requests in flight of one queue owner (an end's QP, or a group's SRQ), by context:
// a context names the table, the slot and the slot's generation, so a second completion of
// the same request, or one for a context never posted, finds nothing.
class Table {
public:
    explicit Table(uint32_t capacity) : reqs_(capacity)
    {
        for (uint32_t i = capacity; i > 0; --i)
            free_.push_back(i - 1);
    }
    uint64_t add(const Req &req);
    Req *find(uint64_t context);
    void release(uint64_t context);
    size_t outstanding() const { return outstanding_; }
    const std::vector<Req> &requests() const { return reqs_; }

    int index = -1; // in Run::tables
    Driver *driver = nullptr;
    End *end = nullptr; // an end's table; nullptr: a group's SRQ table

private:
    std::vector<Req> reqs_;
    std::vector<uint32_t> free_;
    uint32_t gen_ = 0;
    size_t outstanding_ = 0;
};

struct Connection;

// One end of a connection: its QP, its memory, the windows its peer uses.  Driven by one
// thread (its group's driver), which alone touches the fields not marked shared.
struct End {
    Connection *connection = nullptr;
    int side = 0; // 0: the active side (adapter A), 1: the passive side (adapter B)
    End *peer = nullptr;
    Group *group = nullptr;
    bool srq = false; // its receives come from the group's SRQ
    std::shared_ptr<ndk::Qp> qp;
    NDK_QP *raw_qp = nullptr;
    std::shared_ptr<ndk::Connector> connector;

    // local: source slots, receive slots, sink slots; exposed: the peer's write area, the
    // read-only area, the MW's bytes
    Memory local, exposed;
    std::shared_ptr<ndk::Mr> local_mr, exposed_mr;
    uint32_t local_token = 0, exposed_token = 0;
    Window mw, fr;    // shared with the peer
    Pool receives;    // shared: my receive queue, for the peer's sends (unused with an SRQ)
    Pool *peer_receives = nullptr; // where my sends land

    Table table{0};
    std::deque<uint64_t> initiator_order, receive_order;
    uint32_t initiator_out = 0, reads_out = 0;
    std::vector<int> free_sources, free_sinks, free_targets;
    uint64_t send_seq = 0, op_seq = 0, expect_seq = 0;

    uint32_t slot_bytes = 0, receive_slots = 0, max_size = 0;
    uint8_t *source(int i) const { return local.at(size_t(i) * slot_bytes); }
    uint8_t *receive(int i) const { return local.at(size_t(kSources + i) * slot_bytes); }
    uint8_t *sink(int i) const
    {
        return local.at(size_t(kSources + receive_slots + i) * slot_bytes);
    }
    size_t target_offset(int i) const { return size_t(i) * max_size; }
    size_t read_only_offset() const { return size_t(kTargets) * max_size; }
    size_t read_only_size() const { return size_t(2) * max_size; }
    size_t window_offset() const { return size_t(kTargets + 2) * max_size; }
    std::string name() const;
};

struct Connection {
    uint32_t index = 0;
    bool split = false; // its two ends are driven by two threads
    std::array<End, 2> ends;
};

// One driver's objects on one adapter: a PD, a CQ for all its ends, an SRQ if some use one.
struct Group {
    Driver *driver = nullptr;
    int adapter = 0;
    std::shared_ptr<ndk::Pd> pd;
    std::shared_ptr<ndk::Cq> cq;
    NDK_CQ *raw_cq = nullptr;
    std::shared_ptr<ndk::Srq> srq;
    NDK_SRQ *raw_srq = nullptr;
    Memory srq_memory;
    std::shared_ptr<ndk::Mr> srq_mr;
    uint32_t srq_token = 0, srq_slots = 0;
    Pool receives; // shared: the SRQ's receives
    Table table{0};
    std::vector<End *> ends;
    bool armed = false;
};

struct Count {
    uint64_t posted = 0, completed = 0, bytes = 0;
};
struct Stats {
    std::array<Count, kOps> ops{};
    uint64_t receive_invalidates = 0, arms = 0, notifications = 0;
    void add(const Stats &other);
};

struct Run;

// One thread: its ends and groups, polled and posted to in turn.
struct Driver {
    int index = 0;
    Run *run = nullptr;
    std::vector<End *> ends;
    std::vector<Group *> groups;
    Rng rng{0};
    Stats stats;
    std::atomic<const char *> in_call{nullptr}; // the provider function it is in, for a hang
    std::atomic<uint64_t> completions{0};      // for the progress line
    std::atomic<bool> finished{false};
    std::vector<std::string> outstanding; // written by the thread when told to abort

    void main();

private:
    bool poll(Group &g);
    void notifications(Group &g, bool stopping);
    void complete(Group &g, const NDK_RESULT_EX &r);
    void initiated(End &e, End &on, uint64_t context, const Req &req, const NDK_RESULT_EX &r);
    void received(Group &g, Table &table, End &on, uint64_t context, const Req &req,
                  const NDK_RESULT_EX &r);
    void window_used(const Req &req, bool ok);
    bool step(End &e, bool stopping);
    bool own_window(End &e, Window &w, bool stopping);
    bool use_window(End &e, Window &w, bool stopping);
    bool post_receive(End *e, Group &g, int slot);
    bool post_send(End &e, Op op, Window *invalidate = nullptr);
    Req initiator_request(const End &e, Op op) const;
    bool post_rdma(End &e, const Req &req, uint64_t remote, uint32_t token);
    bool post_write(End &e);
    bool post_read(End &e);
    bool post_window_write(End &e, Window &w);
    bool post_window_read(End &e, Window &w);
    bool post_register(End &e, Window &w);
    bool post_invalidate(End &e, Window &w);
    static size_t check_order(std::deque<uint64_t> &order, uint64_t context);
    bool room(const End &e) const;
    bool drained() const;
    void describe_outstanding();
    bool returned(NTSTATUS status, const char *function, End &e, uint64_t context, Op op);
    void verify(const End &e, const Req &req, const std::optional<Mismatch> &m,
                const char *where);
    void fail(const std::string &message);
};

// What every thread shares: the configuration, the stop and abort flags, the tables by index,
// the failures.
struct Run {
    Config config;
    Limits limits;
    std::atomic<bool> stop{false};  // no new work: drain
    std::atomic<bool> abort{false}; // the drain timed out: describe what is outstanding
    std::vector<Table *> tables;    // fixed before the threads start

    void fail(const std::string &message);
    uint64_t failure_count() const { return failures_.load(); }
    std::vector<std::string> first_failures() const;

    Table *table_of(uint64_t context) const
    {
        uint64_t index = context >> 48;
        return index >= 1 && index <= tables.size() ? tables[index - 1] : nullptr;
    }

private:
    std::atomic<uint64_t> failures_{0};
    mutable std::mutex mu_;
    std::vector<std::string> first_;
};

// The two adapters, the listener and every connection, made and connected by the calling
// thread before the drivers start (world.cpp).
class World {
public:
    explicit World(Run &run);
    ~World();
    std::vector<std::unique_ptr<Driver>> drivers;
    const std::array<std::string, 2> &addresses() const { return address_; }
    uint32_t split_connections() const;
    uint32_t srq_ends() const;
    // After the drivers stopped: disconnect events that came during the run, then the
    // adapters' close and, with validation, the violations recorded.
    void close(std::vector<std::string> &failures, std::vector<std::string> &warnings);

private:
    Run &run_;
    std::array<std::shared_ptr<ndk::Adapter>, 2> adapter_;
    std::array<std::string, 2> address_;
    std::shared_ptr<ndk::Listener> listener_;
    uint16_t port_ = 0;
    std::vector<std::unique_ptr<Group>> groups_;
    std::vector<std::unique_ptr<Connection>> connections_;

    void open_adapters();
    void derive_limits();
    Group &group(int driver, int adapter);
    void make_groups();
    void make_end(End &e);
    void make_window(End &e, Window &w, bool is_mw);
    void connect(Connection &c);
};

std::string hex(uint64_t value);

} // namespace stress
