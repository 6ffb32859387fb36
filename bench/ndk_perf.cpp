// ndk_perf: the timing engine behind `ndk perf` and bench/compare.  Each test runs a tight loop
// through the raw NDK ABI (bench/raw_support.hpp) on two soft adapters in this process and
// prints one JSON object on stdout; the Python front end (python/ndk/perf.py) formats it in
// the manner of perftest.  Python is never inside a timed loop.
//
//   ndk_perf send_lat|write_lat|read_lat [--size N] [--iters N] [--warmup N]
//            [--threads] [--progress auto|manual] [--samples FILE]
//       latency samples (one clock read per iteration): min, median, avg, p99, p99.9 in us;
//       --samples writes every sample to FILE, in ns, one per line, in the order measured
//       (what `ndk perf --plot` draws).
//       send_lat is a ping-pong, a sample is half its round trip; --threads runs the pong
//       side on its own thread, both busy-polling (as two perftest processes would); without
//       it one thread drives both sides (the provider's cost alone).
//   ndk_perf send_bw|write_bw|read_bw [--size N] [--iters N] [--inflight N]
//       `inflight` requests in flight, polled in batches: peak (best window) and average
//       bandwidth in MB/s (10^6) and GB/s, message rate in Mpps.
//   ndk_perf memcpy [--size N] [--iters N] [--offset N]
//       the baseline: memcpy between two page-aligned buffers (+offset bytes), GB/s.
//   ndk_perf poll_rate [--batch N] [--count N] [--iters N]
//       a CQ filled with `count` write completions, drained by NdkGetCqResultsEx in batches:
//       completions per second (polling only), and post+poll per completion.
//   ndk_perf create_close [--iters N]
//       create + close of a CQ, PD, MR (and MW, SRQ, QP, connector), inline: ns per pair.
//   ndk_perf scale [--mrs N] [--qps N] [--cq-depth N] [--cq-fill N] [--what mrs,qps,cq]
//       N registered MRs, N QPs, one deep CQ (filled with `cq-fill` results): the time and the
//       resident memory (RSS delta) per object.  Run one `--what` per process for clean RSS
//       deltas (memory freed by an earlier part is reused by a later one).
//
// `ndk_perf --help` lists every test's options with their ranges.  Each value is checked
// whole before anything runs (see "arguments" below): a bad one, an unknown option or a missing
// value is one line on stderr naming the argument and its valid range, and exit code 2.
#include "raw_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

using namespace ndkbench;
using Clock = std::chrono::steady_clock;

namespace {

// ---- arguments ------------------------------------------------------------------------------
// Every option of every test, with its range: the parser checks each value whole (digits only,
// no sign, no suffix, no wrap) against it, and `ndk_perf --help` prints the table.  A bad
// argument is one line on stderr naming it and its valid range, exit code 2 (as argparse).
// python/ndk/perf.py checks the same ranges before it starts this helper (its *_RANGE).

constexpr uint64_t kMaxTransfer = uint64_t{1} << 30; // the soft provider's MaxTransferLength
constexpr uint64_t kMaxCqDepth = uint64_t{1} << 22;  // its MaxCqDepth
constexpr uint64_t kMaxIters = 100000000;

struct Option {
    enum Kind { Number, Flag, Choice, Parts, Text } kind;
    const char *name;
    uint64_t lo = 0, hi = 0;
    const char *choices = ""; // Choice: "auto|manual"; Parts: "mrs,qps,cq"
    const char *note = "";
};

Option size_option(uint64_t hi = kMaxTransfer) { return {Option::Number, "size", 1, hi}; }
Option iters_option(uint64_t lo = 1, const char *note = "")
{
    return {Option::Number, "iters", lo, kMaxIters, "", note};
}

const std::vector<std::pair<std::string, std::vector<Option>>> &test_options()
{
    static const std::vector<Option> latency = {
        size_option(), iters_option(), {Option::Number, "warmup", 0, kMaxIters},
        {Option::Choice, "progress", 0, 0, "auto|manual"}, {Option::Text, "samples"}};
    static const std::vector<Option> bandwidth = {
        size_option(), iters_option(), {Option::Number, "inflight", 1, 1024}};
    static std::vector<Option> send_latency = [] {
        std::vector<Option> v = latency;
        v.insert(v.begin() + 3, {Option::Flag, "threads"});
        return v;
    }();
    static const std::vector<std::pair<std::string, std::vector<Option>>> tests = {
        {"send_lat", send_latency},
        {"write_lat", latency},
        {"read_lat", latency},
        {"send_bw", bandwidth},
        {"write_bw", bandwidth},
        {"read_bw", bandwidth},
        {"memcpy",
         {size_option(uint64_t{1} << 32), iters_option(0, "0: about 4 GiB copied"),
          {Option::Number, "offset", 0, 4095}}},
        {"poll_rate",
         {{Option::Number, "batch", 1, kMaxCqDepth}, {Option::Number, "count", 1, kMaxCqDepth},
          iters_option()}},
        {"create_close", {iters_option()}},
        {"scale",
         {{Option::Number, "mrs", 1, 10000000}, {Option::Number, "qps", 1, 1000000},
          {Option::Number, "cq-depth", 1, kMaxCqDepth},
          {Option::Number, "cq-fill", 0, kMaxCqDepth, "", "at most --cq-depth"},
          {Option::Parts, "what", 0, 0, "mrs,qps,cq"}}},
    };
    return tests;
}

std::string describe(const Option &o)
{
    switch (o.kind) {
    case Option::Number:
        return "--" + std::string(o.name) + " " + std::to_string(o.lo) + ".." +
               std::to_string(o.hi) + (*o.note ? std::string(" (") + o.note + ")" : "");
    case Option::Flag:
        return "--" + std::string(o.name);
    case Option::Choice:
        return "--" + std::string(o.name) + " " + o.choices;
    case Option::Parts:
        return "--" + std::string(o.name) + " {" + o.choices + "},...";
    case Option::Text:
        return "--" + std::string(o.name) + " FILE";
    }
    return "";
}

std::string usage()
{
    std::string text = "usage: ndk_perf TEST [--OPTION VALUE | --OPTION=VALUE]...\n"
                       "tests and their options (whole numbers in the ranges shown):\n";
    for (const auto &[test, options] : test_options()) {
        std::string line = "  " + test + std::string(14 - test.size(), ' ');
        for (const Option &o : options) {
            std::string part = "[" + describe(o) + "]";
            if (line.size() + part.size() > 98) {
                line.pop_back(); // the space after the last part
                text += line + "\n";
                line = std::string(16, ' ');
            }
            line += part + " ";
        }
        line.pop_back();
        text += line + "\n";
    }
    return text;
}

// A usage error: main() prints "ndk_perf TEST: MESSAGE" and exits 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string range_text(const Option &o)
{
    return std::to_string(o.lo) + ".." + std::to_string(o.hi);
}

// The whole of `text` as a number of o's range: digits only, no overflow.
uint64_t parse_number(const Option &o, const std::string &text)
{
    std::string where = "argument --" + std::string(o.name) + ": ";
    bool negative = text.size() > 1 && text[0] == '-' &&
                    text.find_first_not_of("0123456789", 1) == std::string::npos;
    if (negative)
        throw UsageError(where + text + " is out of range (valid: " + range_text(o) + ")");
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw UsageError(where + "'" + text + "' is not a whole number (valid: " +
                         range_text(o) + ")");
    uint64_t value = 0;
    bool too_large = false;
    for (char c : text) {
        auto digit = static_cast<uint64_t>(c - '0');
        if (value > (UINT64_MAX - digit) / 10) {
            too_large = true;
            break;
        }
        value = value * 10 + digit;
    }
    if (too_large || value < o.lo || value > o.hi)
        throw UsageError(where + text + " is out of range (valid: " + range_text(o) + ")");
    return value;
}

// `item` is one of the `sep`-separated words of `list`.
bool in_list(const std::string &item, const std::string &list, char sep)
{
    std::string s(1, sep);
    return !item.empty() && item.find(sep) == std::string::npos &&
           (s + list + s).find(s + item + s) != std::string::npos;
}

struct Args {
    std::string test;
    std::map<std::string, uint64_t> numbers;
    std::map<std::string, std::string> values;
    bool flag(const std::string &k) const { return values.count(k) != 0; }
    uint64_t num(const std::string &k, uint64_t def) const
    {
        auto it = numbers.find(k);
        return it == numbers.end() ? def : it->second;
    }
    std::string str(const std::string &k, const std::string &def) const
    {
        auto it = values.find(k);
        return it == values.end() ? def : it->second;
    }
};

// argv[first..] against the options of args.test (which must be known); throws UsageError.
void parse_options(Args &args, int argc, char **argv, int first)
{
    const std::vector<Option> *options = nullptr;
    std::string names;
    for (const auto &[test, list] : test_options()) {
        if (test == args.test)
            options = &list;
        names += (names.empty() ? "" : " ") + test;
    }
    if (options == nullptr)
        throw UsageError("unknown test '" + args.test + "' (tests: " + names + ")");
    for (int i = first; i < argc; ++i) {
        std::string word = argv[i];
        if (word.rfind("--", 0) != 0 || word.size() == 2)
            throw UsageError("unexpected argument '" + word + "' (options start with --)");
        std::string name = word.substr(2), value;
        size_t eq = name.find('=');
        bool inline_value = eq != std::string::npos;
        if (inline_value) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        auto o = std::find_if(options->begin(), options->end(),
                              [&](const Option &x) { return name == x.name; });
        if (o == options->end()) {
            std::string known;
            for (const Option &x : *options)
                known += " --" + std::string(x.name);
            throw UsageError("unknown option --" + name + " (" + args.test + " takes" + known +
                             ")");
        }
        std::string where = "argument --" + name + ": ";
        if (o->kind == Option::Flag) {
            if (inline_value)
                throw UsageError(where + "takes no value");
            args.values[name] = "1";
            continue;
        }
        if (!inline_value) {
            // A following option is not a value (argparse's rule); "-5" is one, and wrong.
            if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
                throw UsageError(where + "expected a value (" + describe(*o) + ")");
            value = argv[++i];
        }
        switch (o->kind) {
        case Option::Number:
            args.numbers[name] = parse_number(*o, value);
            break;
        case Option::Choice:
        case Option::Parts: {
            bool ok = o->kind == Option::Choice ? in_list(value, o->choices, '|') : !value.empty();
            for (size_t start = 0; ok && o->kind == Option::Parts && start <= value.size();) {
                size_t end = std::min(value.find(',', start), value.size());
                ok = in_list(value.substr(start, end - start), o->choices, ',');
                start = end + 1;
            }
            if (!ok)
                throw UsageError(where + "'" + value + "' is not " +
                                 (o->kind == Option::Choice ? "one of " : "a list of ") +
                                 o->choices);
            args.values[name] = value;
            break;
        }
        case Option::Text:
            if (value.empty())
                throw UsageError(where + "expected a value (" + describe(*o) + ")");
            args.values[name] = value;
            break;
        case Option::Flag:
            break;
        }
    }
    // Checks across options.
    if (args.num("cq-fill", 0) > args.num("cq-depth", kMaxCqDepth))
        throw UsageError("argument --cq-fill: " + std::to_string(args.num("cq-fill", 0)) +
                         " is more than --cq-depth " +
                         std::to_string(args.num("cq-depth", kMaxCqDepth)));
    if (args.flag("threads") && args.str("progress", "auto") == "manual")
        throw UsageError("--threads with --progress manual: step from one thread only");
}

double ns_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double, std::nano>(b - a).count();
}

// A small JSON writer: flat objects of numbers and strings, nested objects by hand.
class Json {
public:
    Json &num(const std::string &k, double v)
    {
        sep();
        std::ostringstream o;
        o.precision(6);
        if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
            o << static_cast<long long>(v);
        else if (std::isfinite(v))
            o << v;
        else
            o << "null";
        out_ += "\"" + k + "\": " + o.str();
        return *this;
    }
    Json &str(const std::string &k, const std::string &v)
    {
        sep();
        out_ += "\"" + k + "\": \"" + v + "\"";
        return *this;
    }
    Json &raw(const std::string &k, const std::string &v)
    {
        sep();
        out_ += "\"" + k + "\": " + v;
        return *this;
    }
    std::string text() const { return "{" + out_ + "}"; }

private:
    void sep()
    {
        if (!out_.empty())
            out_ += ", ";
    }
    std::string out_;
};

std::string latency_stats(std::vector<double> ns)
{
    std::sort(ns.begin(), ns.end());
    auto at = [&](double q) {
        size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(ns.size()))) - 1;
        return ns[std::min(i, ns.size() - 1)] / 1000.0;
    };
    double sum = 0;
    for (double v : ns)
        sum += v;
    return Json()
        .num("samples", static_cast<double>(ns.size()))
        .num("min_us", ns.front() / 1000.0)
        .num("median_us", at(0.5))
        .num("avg_us", sum / static_cast<double>(ns.size()) / 1000.0)
        .num("p99_us", at(0.99))
        .num("p999_us", at(0.999))
        .num("max_us", ns.back() / 1000.0)
        .text();
}

// --samples FILE: every latency sample, in ns, one per line (after the timed loop).
void write_samples(const Args &args, const std::vector<double> &ns)
{
    std::string path = args.str("samples", "");
    if (path.empty())
        return;
    std::FILE *f = std::fopen(path.c_str(), "w");
    if (f == nullptr)
        throw std::runtime_error("cannot write " + path);
    for (double v : ns)
        std::fprintf(f, "%.1f\n", v);
    if (std::fclose(f) != 0)
        throw std::runtime_error("cannot write " + path);
}

void check(NTSTATUS s, const char *what)
{
    if (s != STATUS_SUCCESS)
        fail(what, s);
}

// Poll one result, which must be of `type` (the loops below know the order of their CQs).
void poll_type(NDK_CQ *cq, NDK_OPERATION_TYPE type)
{
    NDK_RESULT_EX r[1];
    poll_n(cq, r, 1);
    if (r[0].Type != type)
        throw std::runtime_error("unexpected completion type " + std::to_string(r[0].Type));
}

std::string manual_options(const Args &a)
{
    return a.str("progress", "auto") == "manual" ? "progress=manual" : "";
}

// ---- latency --------------------------------------------------------------------------------

std::string send_lat(const Args &args)
{
    auto size = static_cast<ULONG>(args.num("size", 64));
    uint64_t iters = args.num("iters", 100000), warmup = args.num("warmup", iters / 10 + 100);
    bool threads = args.flag("threads");
    bool manual = args.str("progress", "auto") == "manual";
    if (manual && threads)
        throw std::runtime_error("--threads with --progress manual: step from one thread only");
    Pair pair(4096, 1024, manual_options(args));
    Region sa(pair.client(), pair.a().pd, size), ra(pair.client(), pair.a().pd, size);
    Region sb(pair.server(), pair.b().pd, size), rb(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp, *qb = pair.b().qp;
    NDK_CQ *ca = pair.a().cq, *cb = pair.b().cq;
    NDK_SGE s_a = sa.sge(0, size), r_a = ra.sge(0, size), s_b = sb.sge(0, size),
            r_b = rb.sge(0, size);
    check(qa->Dispatch->NdkReceive(qa, nullptr, &r_a, 1), "NdkReceive");
    check(qb->Dispatch->NdkReceive(qb, nullptr, &r_b, 1), "NdkReceive");
    uint64_t total = iters + warmup;
    std::vector<double> samples;
    samples.reserve(iters);
    if (!threads) {
        // Auto progress: A's send completes inside NdkSend, so A's CQ holds [send, receive]
        // after B's reply, and B's CQ [receive] then [send].  Every result is polled inside
        // the timed loop (one clock read per iteration).
        NDK_RESULT_EX r[2];
        auto last = Clock::now();
        for (uint64_t i = 0; i < total; ++i) {
            check(qa->Dispatch->NdkSend(qa, nullptr, &s_a, 1, 0), "NdkSend");
            if (manual)
                pair.client().step(1);
            poll_n(cb, r, 1);
            check(qb->Dispatch->NdkReceive(qb, nullptr, &r_b, 1), "NdkReceive");
            check(qb->Dispatch->NdkSend(qb, nullptr, &s_b, 1, 0), "NdkSend");
            if (manual)
                pair.server().step(1);
            poll_n(ca, r, 2);
            check(qa->Dispatch->NdkReceive(qa, nullptr, &r_a, 1), "NdkReceive");
            poll_n(cb, r, 1);
            auto now = Clock::now();
            if (i >= warmup)
                samples.push_back(ns_between(last, now) / 2);
            last = now;
        }
    } else {
        std::thread pong([&] {
            for (uint64_t i = 0; i < total; ++i) {
                poll_type(cb, NdkOperationTypeReceive);
                check(qb->Dispatch->NdkReceive(qb, nullptr, &r_b, 1), "NdkReceive");
                check(qb->Dispatch->NdkSend(qb, nullptr, &s_b, 1, 0), "NdkSend");
                poll_type(cb, NdkOperationTypeSend);
            }
        });
        auto last = Clock::now();
        for (uint64_t i = 0; i < total; ++i) {
            check(qa->Dispatch->NdkSend(qa, nullptr, &s_a, 1, 0), "NdkSend");
            poll_type(ca, NdkOperationTypeSend);
            poll_type(ca, NdkOperationTypeReceive);
            check(qa->Dispatch->NdkReceive(qa, nullptr, &r_a, 1), "NdkReceive");
            auto now = Clock::now();
            if (i >= warmup)
                samples.push_back(ns_between(last, now) / 2);
            last = now;
        }
        pong.join();
    }
    write_samples(args, samples);
    return Json()
        .str("test", "send_lat")
        .num("size", size)
        .num("iters", static_cast<double>(iters))
        .str("mode", threads ? "threads" : "one_thread")
        .str("progress", manual ? "manual" : "auto")
        .str("sample", "half round trip")
        .raw("latency", latency_stats(samples))
        .text();
}

std::string rdma_lat(const Args &args, bool read)
{
    auto size = static_cast<ULONG>(args.num("size", 64));
    uint64_t iters = args.num("iters", 100000), warmup = args.num("warmup", iters / 10 + 100);
    bool manual = args.str("progress", "auto") == "manual";
    Pair pair(4096, 1024, manual_options(args));
    Region local(pair.client(), pair.a().pd, size), remote(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp;
    NDK_SGE s = local.sge(0, size);
    NDK_RESULT_EX r[1];
    std::vector<double> samples;
    samples.reserve(iters);
    auto last = Clock::now();
    for (uint64_t i = 0; i < iters + warmup; ++i) {
        check(read ? qa->Dispatch->NdkRead(qa, nullptr, &s, 1, remote.address(), remote.remote, 0)
                   : qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(), remote.remote,
                                            0),
              "post");
        if (manual)
            pair.client().step(1);
        poll_n(pair.a().cq, r, 1);
        auto now = Clock::now();
        if (i >= warmup)
            samples.push_back(ns_between(last, now));
        last = now;
    }
    write_samples(args, samples);
    return Json()
        .str("test", read ? "read_lat" : "write_lat")
        .num("size", size)
        .num("iters", static_cast<double>(iters))
        .str("mode", "one_thread")
        .str("progress", manual ? "manual" : "auto")
        .str("sample", "post to completion polled")
        .raw("latency", latency_stats(samples))
        .text();
}

// ---- bandwidth ------------------------------------------------------------------------------

std::string bandwidth(const Args &args, const std::string &test)
{
    auto size = static_cast<ULONG>(args.num("size", 65536));
    uint64_t iters = args.num("iters", 5000);
    auto inflight = static_cast<ULONG>(args.num("inflight", 64));
    bool send = test == "send_bw", read = test == "read_bw";
    Pair pair(4096, 1024);
    Region local(pair.client(), pair.a().pd, size), remote(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp, *qb = pair.b().qp;
    NDK_SGE s = local.sge(0, size), rs = remote.sge(0, size);
    std::vector<NDK_RESULT_EX> out(inflight);
    uint64_t windows = std::max<uint64_t>(1, iters / inflight);
    // One untimed window warms the caches and the allocator.
    double best_ns = 1e300;
    Clock::time_point start;
    for (uint64_t w = 0; w <= windows; ++w) {
        auto t0 = Clock::now();
        if (w == 1)
            start = t0;
        if (send)
            for (ULONG i = 0; i < inflight; ++i)
                check(qb->Dispatch->NdkReceive(qb, nullptr, &rs, 1), "NdkReceive");
        for (ULONG i = 0; i < inflight; ++i) {
            NTSTATUS st =
                send ? qa->Dispatch->NdkSend(qa, nullptr, &s, 1, 0)
                : read
                    ? qa->Dispatch->NdkRead(qa, nullptr, &s, 1, remote.address(), remote.remote, 0)
                    : qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(), remote.remote,
                                             0);
            check(st, "post");
        }
        poll_n(pair.a().cq, out.data(), inflight);
        if (send)
            poll_n(pair.b().cq, out.data(), inflight);
        auto t1 = Clock::now();
        if (w > 0)
            best_ns = std::min(best_ns, ns_between(t0, t1));
    }
    double total_ns = ns_between(start, Clock::now());
    double msgs = static_cast<double>(windows) * inflight;
    double bytes = msgs * size;
    return Json()
        .str("test", test)
        .num("size", size)
        .num("iters", msgs)
        .num("inflight", inflight)
        .num("peak_mb_s", static_cast<double>(inflight) * size / best_ns * 1e3)
        .num("avg_mb_s", bytes / total_ns * 1e3)
        .num("avg_gb_s", bytes / total_ns)
        .num("peak_gb_s", static_cast<double>(inflight) * size / best_ns)
        .num("msg_rate_mpps", msgs / total_ns * 1e3)
        .text();
}

// ---- baselines ------------------------------------------------------------------------------

std::string memcpy_test(const Args &args)
{
    size_t size = args.num("size", 1 << 20), offset = args.num("offset", 0);
    uint64_t iters = args.num("iters", 0);
    if (iters == 0) // about 4 GiB copied, at least 20 copies
        iters = std::max<uint64_t>(20, (uint64_t{4} << 30) / std::max<size_t>(size, 1));
    size_t span = ((size + offset + 4095) & ~size_t{4095});
    auto *src = static_cast<unsigned char *>(std::aligned_alloc(4096, span));
    auto *dst = static_cast<unsigned char *>(std::aligned_alloc(4096, span));
    std::memset(src, 1, span);
    std::memset(dst, 2, span);
    double best = 1e300;
    for (uint64_t i = 0; i < iters / 10 + 1; ++i) // warm
        std::memcpy(dst + offset, src + offset, size);
    auto start = Clock::now();
    for (uint64_t i = 0; i < iters; ++i) {
        auto t0 = Clock::now();
        std::memcpy(dst + offset, src + offset, size);
        asm volatile("" : : "r"(dst) : "memory");
        best = std::min(best, ns_between(t0, Clock::now()));
    }
    double total = ns_between(start, Clock::now());
    std::free(src);
    std::free(dst);
    return Json()
        .str("test", "memcpy")
        .num("size", static_cast<double>(size))
        .num("offset", static_cast<double>(offset))
        .num("iters", static_cast<double>(iters))
        .num("avg_gb_s", static_cast<double>(size) * iters / total)
        .num("peak_gb_s", static_cast<double>(size) / best)
        .text();
}

std::string poll_rate(const Args &args)
{
    auto batch = static_cast<ULONG>(args.num("batch", 64));
    auto count = static_cast<ULONG>(args.num("count", 65536));
    uint64_t iters = args.num("iters", 20);
    Pair pair(count, 1024);
    Region local(pair.client(), pair.a().pd, 8), remote(pair.server(), pair.b().pd, 8);
    NDK_QP *qa = pair.a().qp;
    NDK_CQ *cq = pair.a().cq;
    NDK_SGE s = local.sge(0, 8);
    std::vector<NDK_RESULT_EX> out(batch);
    double poll_ns = 0, post_ns = 0, best_poll = 1e300, best_round = 1e300;
    for (uint64_t it = 0; it <= iters; ++it) {
        auto t0 = Clock::now();
        for (ULONG i = 0; i < count; ++i)
            check(qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(), remote.remote, 0),
                  "NdkWrite");
        auto t1 = Clock::now();
        ULONG got = 0;
        while (got < count) {
            ULONG k = cq->Dispatch->NdkGetCqResultsEx(cq, out.data(), batch);
            if (k == 0)
                fail("poll_rate: the CQ ran dry", STATUS_UNSUCCESSFUL);
            got += k;
        }
        auto t2 = Clock::now();
        if (it > 0) { // the first round is a warm-up
            post_ns += ns_between(t0, t1);
            poll_ns += ns_between(t1, t2);
            best_poll = std::min(best_poll, ns_between(t1, t2));
            best_round = std::min(best_round, ns_between(t0, t2));
        }
    }
    double n = static_cast<double>(iters) * count;
    return Json()
        .str("test", "poll_rate")
        .num("batch", batch)
        .num("count", count)
        .num("iters", static_cast<double>(iters))
        .num("poll_ns_per_completion", poll_ns / n)
        .num("completions_per_s", n / poll_ns * 1e9)
        .num("post_ns_per_write", post_ns / n)
        .num("post_poll_per_s", n / (poll_ns + post_ns) * 1e9)
        .num("best_completions_per_s", count / best_poll * 1e9)
        .num("best_post_poll_per_s", count / best_round * 1e9)
        .text();
}

// ---- control plane --------------------------------------------------------------------------

std::string create_close(const Args &args)
{
    uint64_t iters = args.num("iters", 200000);
    RawAdapter a("address=192.0.2.78\n");
    NDK_PD *pd0 = a.pd();
    NDK_CQ *cq0 = a.cq(1024);
    Done done;
    auto closed = [&](NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_OBJECT fn) {
        check(fn(h, Done::close, &done), "close (inline)");
    };
    std::map<std::string, std::function<void()>> ops = {
        {"cq",
         [&] {
             NDK_CQ *o = nullptr;
             check(a.d().NdkCreateCq(a.get(), 64, ignore_cq, nullptr, nullptr, Done::create, &done,
                                     &o),
                   "NdkCreateCq");
             closed(&o->Header, o->Dispatch->NdkCloseCq);
         }},
        {"pd",
         [&] {
             NDK_PD *o = nullptr;
             check(a.d().NdkCreatePd(a.get(), Done::create, &done, &o), "NdkCreatePd");
             closed(&o->Header, o->Dispatch->NdkClosePd);
         }},
        {"mr",
         [&] {
             NDK_MR *o = nullptr;
             check(pd0->Dispatch->NdkCreateMr(pd0, FALSE, Done::create, &done, &o), "NdkCreateMr");
             closed(&o->Header, o->Dispatch->NdkCloseMr);
         }},
        {"mw",
         [&] {
             NDK_MW *o = nullptr;
             check(pd0->Dispatch->NdkCreateMw(pd0, Done::create, &done, &o), "NdkCreateMw");
             closed(&o->Header, o->Dispatch->NdkCloseMw);
         }},
        {"srq",
         [&] {
             NDK_SRQ *o = nullptr;
             check(pd0->Dispatch->NdkCreateSrq(pd0, 64, 4, 0, ignore_srq, nullptr, nullptr,
                                               Done::create, &done, &o),
                   "NdkCreateSrq");
             closed(&o->Header, o->Dispatch->NdkCloseSrq);
         }},
        {"qp",
         [&] {
             NDK_QP *o = nullptr;
             check(pd0->Dispatch->NdkCreateQp(pd0, cq0, cq0, nullptr, 64, 64, 4, 4, 0,
                                              Done::create, &done, &o),
                   "NdkCreateQp");
             closed(&o->Header, o->Dispatch->NdkCloseQp);
         }},
        {"connector",
         [&] {
             NDK_CONNECTOR *o = nullptr;
             check(a.d().NdkCreateConnector(a.get(), Done::create, &done, &o),
                   "NdkCreateConnector");
             closed(&o->Header, o->Dispatch->NdkCloseConnector);
         }},
        {"mr_register_4k",
         [&, mr = a.mr(pd0), buffer = std::vector<char>(4096), mdl = MDL{}]() mutable {
             NdkInitializeMdl(&mdl, buffer.data(), 4096);
             check(mr->Dispatch->NdkRegisterMr(mr, &mdl, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                               Done::request, &done),
                   "NdkRegisterMr");
             check(mr->Dispatch->NdkDeregisterMr(mr, Done::request, &done), "NdkDeregisterMr");
         }},
    };
    Json out;
    out.str("test", "create_close").num("iters", static_cast<double>(iters));
    Json ns;
    for (auto &[name, op] : ops) {
        for (uint64_t i = 0; i < iters / 10 + 10; ++i)
            op();
        auto t0 = Clock::now();
        for (uint64_t i = 0; i < iters; ++i)
            op();
        ns.num(name, ns_between(t0, Clock::now()) / static_cast<double>(iters));
    }
    out.raw("ns_per_create_close", ns.text());
    return out.text();
}

std::string scale(const Args &args)
{
    uint64_t mrs = args.num("mrs", 100000), qps = args.num("qps", 10000);
    auto cq_depth = static_cast<ULONG>(args.num("cq-depth", 1u << 22));
    uint64_t cq_fill = args.num("cq-fill", 0);
    std::string what = "," + args.str("what", "mrs,qps,cq") + ",";
    auto wanted = [&](const char *part) {
        return what.find("," + std::string(part) + ",") != std::string::npos;
    };
    RawAdapter a("address=192.0.2.79\n");
    NDK_PD *pd = a.pd();
    Done done;
    Json out;
    out.str("test", "scale");

    // MRs: each created and registered over one page.
    if (wanted("mrs")) {
        size_t before = rss_bytes();
        auto t0 = Clock::now();
        auto *buffer = static_cast<unsigned char *>(std::aligned_alloc(4096, 4096));
        std::vector<NDK_MR *> list(mrs);
        std::vector<MDL> mdls(mrs);
        size_t after_arrays = rss_bytes();
        for (uint64_t i = 0; i < mrs; ++i) {
            check(pd->Dispatch->NdkCreateMr(pd, FALSE, Done::create, &done, &list[i]),
                  "NdkCreateMr");
            NdkInitializeMdl(&mdls[i], buffer, 4096);
            check(list[i]->Dispatch->NdkRegisterMr(list[i], &mdls[i], 4096,
                                                   NDK_MR_FLAG_ALLOW_LOCAL_WRITE, Done::request,
                                                   &done),
                  "NdkRegisterMr");
        }
        double ns = ns_between(t0, Clock::now());
        size_t after = rss_bytes();
        auto t1 = Clock::now();
        for (uint64_t i = 0; i < mrs; ++i) {
            check(list[i]->Dispatch->NdkDeregisterMr(list[i], Done::request, &done),
                  "NdkDeregisterMr");
            check(list[i]->Dispatch->NdkCloseMr(&list[i]->Header, Done::close, &done),
                  "NdkCloseMr");
        }
        double close_ns = ns_between(t1, Clock::now());
        std::free(buffer);
        out.raw("mrs",
                Json()
                    .num("count", static_cast<double>(mrs))
                    .num("create_register_us_each", ns / static_cast<double>(mrs) / 1000)
                    .num("deregister_close_us_each", close_ns / static_cast<double>(mrs) / 1000)
                    .num("provider_bytes_each", (static_cast<double>(after) - after_arrays) / mrs)
                    .num("harness_bytes_each",
                         (static_cast<double>(after_arrays) - before) / mrs)
                    .text());
    }
    // QPs on one CQ.
    if (wanted("qps")) {
        NDK_CQ *cq = a.cq(1024);
        std::vector<NDK_QP *> list(qps);
        size_t after_arrays = rss_bytes();
        auto t0 = Clock::now();
        for (uint64_t i = 0; i < qps; ++i)
            check(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 64, 64, 4, 4, 0, Done::create,
                                            &done, &list[i]),
                  "NdkCreateQp");
        double ns = ns_between(t0, Clock::now());
        size_t after = rss_bytes();
        auto t1 = Clock::now();
        for (uint64_t i = 0; i < qps; ++i)
            check(list[i]->Dispatch->NdkCloseQp(&list[i]->Header, Done::close, &done),
                  "NdkCloseQp");
        double close_ns = ns_between(t1, Clock::now());
        out.raw("qps", Json()
                           .num("count", static_cast<double>(qps))
                           .num("create_us_each", ns / static_cast<double>(qps) / 1000)
                           .num("close_us_each", close_ns / static_cast<double>(qps) / 1000)
                           .num("provider_bytes_each",
                                (static_cast<double>(after) - after_arrays) / qps)
                           .text());
    }
    // One deep CQ, optionally filled with write completions.
    if (wanted("cq")) {
        size_t before = rss_bytes();
        auto t0 = Clock::now();
        NDK_CQ *cq = a.cq(cq_depth);
        double create_ns = ns_between(t0, Clock::now());
        size_t created = rss_bytes();
        double fill_ns = 0;
        size_t filled = created;
        if (cq_fill > 0) {
            // Filled through a connected pair whose CQ has that depth (its own adapters).
            Pair pair(static_cast<ULONG>(std::min<uint64_t>(cq_fill + 16, cq_depth)), 1024);
            Region local(pair.client(), pair.a().pd, 8), remote(pair.server(), pair.b().pd, 8);
            NDK_QP *qa = pair.a().qp;
            NDK_SGE s = local.sge(0, 8);
            size_t before_fill = rss_bytes();
            auto t1 = Clock::now();
            for (uint64_t i = 0; i < cq_fill; ++i)
                check(qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(), remote.remote,
                                             0),
                      "NdkWrite");
            fill_ns = ns_between(t1, Clock::now());
            filled = rss_bytes();
            out.raw("cq_fill", Json()
                                   .num("results", static_cast<double>(cq_fill))
                                   .num("bytes_per_result",
                                        (static_cast<double>(filled) - before_fill) / cq_fill)
                                   .num("post_us_each", fill_ns / cq_fill / 1000)
                                   .text());
        }
        out.raw("cq", Json()
                          .num("depth", cq_depth)
                          .num("create_us", create_ns / 1000)
                          .num("bytes_at_create", static_cast<double>(created) - before)
                          .text());
        check(cq->Dispatch->NdkCloseCq(&cq->Header, Done::close, &done), "NdkCloseCq");
    }
    out.num("rss_mb_end", static_cast<double>(rss_bytes()) / 1e6);
    return out.text();
}

} // namespace

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
            std::printf("%s", usage().c_str());
            return 0;
        }
    if (argc < 2) {
        std::fprintf(stderr, "%s", usage().c_str());
        return 2;
    }
    Args args;
    args.test = argv[1];
    try {
        parse_options(args, argc, argv, 2);
    } catch (const UsageError &e) {
        bool known = std::any_of(test_options().begin(), test_options().end(),
                                 [&](const auto &t) { return t.first == args.test; });
        std::fprintf(stderr, "ndk_perf%s: %s\n", known ? (" " + args.test).c_str() : "",
                     e.what());
        return 2;
    }
    try {
        std::string out;
        const std::string &t = args.test;
        if (t == "send_lat")
            out = send_lat(args);
        else if (t == "write_lat" || t == "read_lat")
            out = rdma_lat(args, t == "read_lat");
        else if (t == "send_bw" || t == "write_bw" || t == "read_bw")
            out = bandwidth(args, t);
        else if (t == "memcpy")
            out = memcpy_test(args);
        else if (t == "poll_rate")
            out = poll_rate(args);
        else if (t == "create_close")
            out = create_close(args);
        else if (t == "scale")
            out = scale(args);
        else
            throw std::logic_error("no runner for test " + t);
        std::printf("%s\n", out.c_str());
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ndk_perf %s: %s\n", args.test.c_str(), e.what());
        return 1;
    }
}
