// ndk_walk: a random walker over every NDK function, in the manner of google/rdma-unit-test's
// random_walk (docs/walk.md).  The pieces:
//
//   Op      one operation with its resolved arguments (object ids, sizes, offsets, flags), so a
//           recorded trace replays without the random generator;
//   World   two validated adapters and the walker's model of every object, request and byte;
//           exec() runs one Op against the providers and checks it (the oracle);
//   Walker  (walk.cpp) generates mostly valid Ops from a seed, runs them, and on a failure
//           shrinks the trace (delta debugging, each candidate replayed in a forked child).
#pragma once

#include "ndk/objects.hpp"
#include "ndk/status.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace walk {

// Operation codes; the names are the trace's "op" field and walk.py's vocabulary.
#define WALK_OPS(X)                                                                                \
    X(knob, "ad", "key", "val")                                                                    \
    X(query, "ad")                                                                                 \
    X(cq_create, "ad", "new", "depth")                                                             \
    X(pd_create, "ad", "new")                                                                      \
    X(conn_create, "ad", "new")                                                                    \
    X(lis_create, "ad", "new")                                                                     \
    X(se_create, "ad", "new", "port")                                                              \
    X(listen, "lis", "port")                                                                       \
    X(pause, "lis", "on")                                                                          \
    X(mr_create, "pd", "new", "fast")                                                              \
    X(mw_create, "pd", "new")                                                                      \
    X(srq_create, "pd", "new", "depth", "sge", "thr")                                              \
    X(qp_create, "pd", "new", "rcq", "icq", "rdepth", "idepth", "rsge", "isge", "inl")             \
    X(qps_create, "pd", "new", "rcq", "icq", "srq", "idepth", "isge", "inl")                       \
    X(priv, "pd")                                                                                  \
    X(reg, "mr", "size", "flags")                                                                  \
    X(dereg, "mr")                                                                                 \
    X(frinit, "mr", "pages", "remote")                                                             \
    X(lam, "ad", "new", "mr", "off", "len", "small")                                               \
    X(lamrel, "lam")                                                                               \
    X(fastreg, "qp", "mr", "lam", "page", "n", "fbo", "len", "flags", "order")                     \
    X(arm, "cq", "type")                                                                           \
    X(poll, "cq", "n", "ex")                                                                       \
    X(resize, "cq", "depth")                                                                       \
    X(moder, "cq", "interval", "count")                                                            \
    X(srq_mod, "srq", "depth", "thr")                                                              \
    X(srq_recv, "srq", "mr", "off0", "len0", "off1", "len1")                                       \
    X(recv, "qp", "mr", "off0", "len0", "off1", "len1")                                            \
    X(send, "qp", "mr", "off0", "len0", "off1", "len1", "flags")                                   \
    X(sendinv, "qp", "mr", "off0", "len0", "flags", "tgt")                                         \
    X(write, "qp", "mr", "off0", "len0", "rmr", "roff", "flags")                                   \
    X(read, "qp", "mr", "off0", "len0", "rmr", "roff", "flags")                                    \
    X(bind, "qp", "mr", "mw", "off", "len", "flags")                                               \
    X(inval, "qp", "tgt", "flags")                                                                 \
    X(badtok, "qp", "mr", "off0", "len0")                                                          \
    X(flush, "qp")                                                                                 \
    X(connect, "conn", "qp", "lis", "aqp", "new", "mode")                                          \
    X(disc, "conn")                                                                                \
    X(conndata, "conn")                                                                            \
    X(addr, "conn")                                                                                \
    X(close, "obj")                                                                                \
    X(corrupt, "n")                                                                                \
    X(reset, "n")

enum class Code : uint8_t {
#define WALK_ENUM(name, ...) name,
    WALK_OPS(WALK_ENUM)
#undef WALK_ENUM
        count_
};

constexpr int kMaxArgs = 9;

struct Op {
    uint64_t id = 0; // also the request context of a post and the id of a created object
    Code code = Code::query;
    std::array<int64_t, kMaxArgs> a{};
};

const char *op_name(Code code);
const std::vector<const char *> &arg_names(Code code);
std::optional<Code> code_of(const std::string &name);

std::string op_to_json(const Op &op);
std::optional<Op> op_from_json(const std::string &line);

// What ended a walk or a replay.  kind "" = clean.  The signature (kind + key) is what the
// shrinker keeps constant while it removes operations.
struct Failure {
    std::string kind;   // violation, data, lost, unknown_completion, status, timeout, hang, crash
    std::string key;    // rule id, function name, ... (the part of the signature beyond kind)
    std::string detail; // human-readable
    uint64_t op = 0;    // the op at which it was detected
    bool failed() const { return !kind.empty(); }
    std::string signature() const { return kind + ":" + key; }
};

struct Config {
    std::string provider = "soft";
    uint64_t seed = 1;
    double seconds = 10;
    uint64_t max_ops = 0;          // 0: until `seconds`
    uint64_t epoch_ops = 10000;    // a `reset` op (fresh adapters) this often: a validated
                                   // adapter keeps every shadow and call record until it closes
    uint64_t inject_failure_at = 0; // hidden: an op `corrupt` at this op id (test of the shrinker)
    std::string misbehave;          // soft knob for every adapter (test of the shrinker)
    std::string create_mode;        // initial create_mode knob
    int threads = 1;
    double hang_seconds = 20;       // watchdog
    double wait_seconds = 5;        // bounded wait for any single completion
    std::string out_dir = ".";
    bool shrink = true;
    double shrink_seconds = 120;
    int thread_index = 0;           // which world (addresses) when threads > 1
};

// Per NDK function: status -> count.
using StatusCounts = std::map<std::string, std::map<std::string, uint64_t>>;

} // namespace walk
