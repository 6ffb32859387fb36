// The walker's world: two validated adapters, the model of every object it created, every
// request in flight and every byte it expects, and exec(), which runs one Op and checks it.
#pragma once

#include "walk.hpp"

#include <chrono>
#include <functional>

namespace walk {

enum class Kind : uint8_t { Cq, Pd, Mr, Mw, Srq, Qp, Connector, Listener, Endpoint, Count };

constexpr uint32_t kChunk = 64;           // buffer reservation granularity
constexpr int64_t kIntendOverpost = 1 << 29; // flag bits of a post op: misuse on purpose
constexpr int64_t kIntendOverrun = 1 << 28;
constexpr int64_t kIntentMask = kIntendOverpost | kIntendOverrun;

// The byte at stream offset `off` of what data op `op` moves: the first 8 bytes of a message
// are the op id (so a receive names its send), the rest a hash of (op, offset).  walk.py's
// scenarios compute the same bytes.
inline uint8_t pattern(uint64_t op, uint64_t off)
{
    if (off < 8)
        return static_cast<uint8_t>(op >> (8 * off));
    uint64_t x = op * 0x9E3779B97F4A7C15ull + (off >> 3) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return static_cast<uint8_t>(x >> ((off & 7) * 8));
}

// The argument slot holding a post's flags (-1: none).
inline int flag_slot(Code code)
{
    switch (code) {
    case Code::send: return 6;
    case Code::sendinv: return 4;
    case Code::write:
    case Code::read: return 6;
    case Code::bind: return 5;
    case Code::inval: return 2;
    default: return -1;
    }
}

struct Buf {
    std::vector<uint8_t> d;
    std::vector<uint8_t> busy; // one flag per kChunk bytes: in use by a request in flight
    explicit Buf(size_t n) : d(n), busy((n + kChunk - 1) / kChunk) {}
    bool free_range(uint64_t off, uint64_t len) const;
    void mark(uint64_t off, uint64_t len, bool on);
};

struct Span {
    std::shared_ptr<Buf> b;
    uint32_t off = 0, len = 0;
};

struct Obj {
    Kind kind{};
    int ad = 0;
    int64_t id = 0;
    std::shared_ptr<ndk::Object> h;
    int64_t pd = -1; // parent PD (MR, MW, SRQ, QP)
    // CQ
    uint32_t depth = 0;
    int64_t pending = 0; // requests in flight that may put an entry here
    bool tainted = false; // may have overrun: its requests may vanish
    // MR
    bool fast = false, registered = false;
    std::shared_ptr<Buf> buf;
    uint32_t flags = 0, ltok = 0, rtok = 0;
    bool fr_init = false;
    // MW
    int bind_state = 0; // 0 unbound, 1 bind in flight, 2 bound
    int64_t mw_mr = -1;
    uint32_t mw_off = 0, mw_len = 0, mw_tok = 0, mw_flags = 0;
    // SRQ / QP queues: op ids in flight, in posting order
    std::deque<uint64_t> rq, iq;
    uint32_t rdepth = 0, idepth = 0, rsge = 0, isge = 0, inl = 0;
    int64_t rcq = -1, icq = -1, srq = -1;
    int qstate = 0;      // QP: 0 idle, 1 connected, 2 spent; connector: 0 idle, 1 connected, 2 spent
    int64_t peer = -1;   // QP: the connected QP
    int64_t conn = -1;   // QP: its connector; connector: its QP
    int64_t avail = 0;   // QP: receives posted and not yet consumed by a send (model)
    bool defer_open = false;
    bool no_conndata = false; // connector: Accept or CompleteConnect was called (digest 1.8)
    // listener
    uint16_t port = 0;
    bool listening = false, paused = false;
};

struct Req {
    Code code{};
    int64_t qp = -1, cq = -1, srq = -1;
    int queue = 0; // 0 initiator, 1 receive, 2 SRQ
    bool silent = false;
    std::vector<Span> check; // what a success must have written (write: remote; read/recv: sink)
    std::vector<Span> hold;  // reserved ranges, released at completion
    int64_t target = -1;     // bind: MW; inval: MR or MW; sendinv: the peer's MR or MW
    uint32_t len = 0;
};

struct SendRec {
    int64_t to_qp = -1;
    uint32_t len = 0;
};

class World {
public:
    World(const Config &config, std::vector<std::string> options);
    ~World();
    static std::vector<std::string> default_options(const Config &config);

    bool open(); // false + failure set when an adapter does not open
    void exec(const Op &op);
    // Generate the next op from `rng` (mostly valid against the model).
    Op generate(std::mt19937_64 &rng, uint64_t id);
    // End of walk: flush, drain, account every request, close everything, judge the record.
    void finish();

    Failure failure;
    uint64_t skipped = 0;
    StatusCounts statuses;
    std::map<std::string, uint64_t> warnings;
    std::map<std::string, uint64_t> intended;
    const std::vector<std::string> &options() const { return options_; }

private:
    friend struct Gen;
    Obj *get(int64_t id, Kind kind);
    void add(Obj obj);
    void remove(int64_t id);
    void note(const char *fn, NTSTATUS status);
    void fail(const std::string &kind, const std::string &key, const std::string &detail);
    bool wait(const ndk::Call &call, const char *fn);
    void note_call(const char *fn, const ndk::Call &call); // inline status, then the completion's
    void check_violations(const std::set<std::string> &allowed);
    std::chrono::duration<double> wait_for() const;

    template <class T>
    std::shared_ptr<T> handle(int64_t id, Kind kind)
    {
        Obj *o = get(id, kind);
        return o ? std::static_pointer_cast<T>(o->h) : nullptr;
    }

    // requests
    bool post_common(const Op &op, Obj &qp_or_srq, int queue, NTSTATUS status, Req req,
                     int64_t cq_id);
    void complete(const NDK_RESULT_EX &r, int64_t cq_id);
    void settle(uint64_t id, Req &req, bool success, const NDK_RESULT_EX *r);
    void drop_request(uint64_t id);
    void poll_cq(int64_t cq_id, ULONG n, bool ex);
    void drain_for(const std::set<int64_t> &qps, bool judge);
    void abandon_cq(int64_t cq_id);
    bool sge_span(int64_t mr_id, int64_t pd, int64_t off, int64_t len, NDK_SGE &sge, Span &span,
                  bool need_write);
    void pump_events();

    // ops
    void op_create(const Op &op);
    void op_post(const Op &op);
    void op_connect(const Op &op);
    void op_close(const Op &op);

    Config config_;
    std::vector<std::string> options_;
    std::vector<std::shared_ptr<ndk::Adapter>> ad_;
    std::vector<std::string> host_;
    std::vector<NDK_ADAPTER_INFO> info_;
    std::unordered_map<int64_t, Obj> objs_;
    std::array<std::vector<int64_t>, static_cast<size_t>(Kind::Count)> live_;
    std::unordered_map<uint64_t, Req> out_;
    std::unordered_map<uint64_t, SendRec> sends_;
    std::vector<ndk::Call> closes_; // every close issued: each must complete by the end
    std::vector<std::shared_ptr<ndk::Object>> closed_; // handles kept until the end
    std::shared_ptr<Buf> scratch_;   // INLINE sends read from here (never registered)
    const Op *current_ = nullptr;
    bool corrupt_pending_ = false;
    uint64_t checks_ = 0;
};

} // namespace walk
