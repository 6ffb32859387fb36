// ndk_walk: the random walker's engine (docs/walk.md), driven by `ndk walk` (python/ndk/walk.py).
//
//   ndk_walk run [--provider P] [--seconds N] [--ops N] [--seed S] [--threads T] [--out DIR]
//                [--no-shrink] [--shrink-seconds N] [--hang-seconds N]
//                [--inject-failure-at N] [--misbehave NAME] [--create-mode MODE]
//   ndk_walk replay TRACE [--provider P]     run a recorded trace once (JSON result)
//   ndk_walk shrink TRACE [--shrink-seconds N]
//
// The walk runs in a forked child that records each op into shared memory before running it,
// so the parent has the trace even after a crash, and kills the child when its op counter stops
// (the watchdog).  On a failure the parent shrinks the trace by delta debugging: each candidate
// is replayed in a fresh forked child and kept if it fails with the same signature.  Prints one
// JSON object on stdout.  Exit: 0 clean, 1 a failure, 2 usage.
#include "walk.hpp"
#include "world.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace walk;
using Clock = std::chrono::steady_clock;

namespace {

std::string json_escape(const std::string &s)
{
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\', out += c;
        else if (c == '\n')
            out += "\\n";
        else if (static_cast<unsigned char>(c) < 0x20)
            out += ' ';
        else
            out += c;
    }
    return out;
}

std::string options_text(const std::vector<std::string> &options)
{
    // one adapter's options per '|', its lines joined by ';'
    std::string out;
    for (size_t i = 0; i < options.size(); ++i) {
        if (i)
            out += '|';
        for (char c : options[i])
            out += c == '\n' ? ';' : c;
    }
    return out;
}

std::vector<std::string> options_parse(const std::string &text)
{
    std::vector<std::string> out(1);
    for (char c : text) {
        if (c == '|')
            out.emplace_back();
        else
            out.back() += c == ';' ? '\n' : c;
    }
    return out;
}

// --- shared memory between the parent and the walking child --------------------------------

constexpr int kMaxThreads = 16;
constexpr size_t kResultBytes = 1 << 20;

struct Shared {
    std::atomic<uint64_t> count[kMaxThreads];
    std::atomic<int> finished;
    int failed_thread;
    uint64_t executed; // ops a replay ran (not skipped), in trace(0): Shrinker::executed_only
    char result[kResultBytes]; // the child's JSON fragment
};

struct Region {
    Shared *shared = nullptr;
    Op *ops = nullptr;
    size_t cap = 0; // ops per thread
    int threads = 1;
    Op *trace(int t) { return ops + static_cast<size_t>(t) * cap; }
};

Region map_region(int threads, size_t cap)
{
    Region r;
    r.threads = threads;
    r.cap = cap;
    size_t bytes = sizeof(Shared) + sizeof(Op) * cap * threads;
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        std::exit(2);
    }
    r.shared = new (p) Shared();
    r.ops = reinterpret_cast<Op *>(static_cast<char *>(p) + sizeof(Shared));
    return r;
}

std::string counts_json(const StatusCounts &statuses)
{
    std::string out = "{";
    bool first = true;
    for (const auto &[fn, m] : statuses) {
        out += std::string(first ? "" : ", ") + "\"" + json_escape(fn) + "\": {";
        first = false;
        bool f2 = true;
        for (const auto &[status, n] : m) {
            out += std::string(f2 ? "" : ", ") + "\"" + status + "\": " + std::to_string(n);
            f2 = false;
        }
        out += "}";
    }
    return out + "}";
}

std::string map_json(const std::map<std::string, uint64_t> &m)
{
    std::string out = "{";
    bool first = true;
    for (const auto &[k, n] : m) {
        out += std::string(first ? "" : ", ") + "\"" + json_escape(k) + "\": " + std::to_string(n);
        first = false;
    }
    return out + "}";
}

std::string failure_json(const Failure &f)
{
    if (!f.failed())
        return "null";
    return "{\"kind\": \"" + json_escape(f.kind) + "\", \"key\": \"" + json_escape(f.key) +
           "\", \"signature\": \"" + json_escape(f.signature()) + "\", \"op\": " +
           std::to_string(f.op) + ", \"detail\": \"" + json_escape(f.detail) + "\"}";
}

// --- one world, walking or replaying ---------------------------------------------------------

struct WorldRun {
    Failure failure;
    uint64_t ops = 0, skipped = 0;
    StatusCounts statuses;
    std::map<std::string, uint64_t> warnings, intended;
};

void merge(WorldRun &into, const World &w)
{
    into.skipped += w.skipped;
    for (const auto &[fn, m] : w.statuses)
        for (const auto &[s, n] : m)
            into.statuses[fn][s] += n;
    for (const auto &[k, n] : w.warnings)
        into.warnings[k] += n;
    for (const auto &[k, n] : w.intended)
        into.intended[k] += n;
}

// Walk: generate and run ops until the budget ends, recording each before it runs.
WorldRun walk_world(Config config, Op *trace, size_t cap, std::atomic<uint64_t> &count,
                    Clock::time_point deadline, uint64_t max_ops)
{
    WorldRun run;
    World w(config, World::default_options(config));
    if (w.open()) {
        std::mt19937_64 rng(config.seed * 0x9E3779B97F4A7C15ull + config.thread_index);
        for (uint64_t id = 1; id <= cap; ++id) {
            if (max_ops ? run.ops >= max_ops : ((id & 255) == 0 && Clock::now() >= deadline))
                break;
            if (max_ops && (id & 255) == 0 && Clock::now() >= deadline + std::chrono::hours(1))
                break;
            Op op = config.inject_failure_at == id                        ? Op{id, Code::corrupt, {}}
                    : config.epoch_ops && id % config.epoch_ops == 0 ? Op{id, Code::reset, {}}
                                                                     : w.generate(rng, id);
            trace[id - 1] = op;
            count.store(id, std::memory_order_release);
            w.exec(op);
            ++run.ops;
            if (w.failure.failed())
                break;
        }
        w.finish();
    }
    run.failure = w.failure;
    merge(run, w);
    return run;
}

// `ran`, when given, is told of every op the world executed (did not skip).
WorldRun replay_world(const Config &config, const std::vector<Op> &ops,
                      const std::vector<std::string> &options, std::atomic<uint64_t> *count,
                      const std::function<void(const Op &)> &ran = {})
{
    WorldRun run;
    World w(config, options);
    if (w.open()) {
        for (const auto &op : ops) {
            if (count)
                count->store(op.id, std::memory_order_release);
            uint64_t skipped = w.skipped;
            w.exec(op);
            if (ran && w.skipped == skipped)
                ran(op);
            ++run.ops;
            if (w.failure.failed())
                break;
        }
        w.finish();
    }
    run.failure = w.failure;
    merge(run, w);
    return run;
}

// --- children ----------------------------------------------------------------------------

struct ChildOutcome {
    Failure failure;
    std::string result; // the child's JSON fragment
};

const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    default: return "signal";
    }
}

// Run `body` in a forked child; watch the op counters; kill it when they stop for
// `hang_seconds`.  The child writes its JSON fragment into region.shared->result and the
// failure (kind\tkey\top\tdetail) after a NUL.
ChildOutcome run_child(Region &region, double hang_seconds, const std::function<void()> &body)
{
    for (int t = 0; t < kMaxThreads; ++t)
        region.shared->count[t] = 0;
    region.shared->finished = 0;
    region.shared->failed_thread = -1;
    region.shared->result[0] = 0;
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        std::exit(2);
    }
    if (pid == 0) {
        body();
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(0);
    }
    ChildOutcome out;
    uint64_t last = ~0ull;
    auto changed = Clock::now();
    int status = 0;
    while (true) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid)
            break;
        uint64_t sum = 0;
        for (int t = 0; t < kMaxThreads; ++t)
            sum += region.shared->count[t].load();
        if (sum != last) {
            last = sum;
            changed = Clock::now();
        } else if (std::chrono::duration<double>(Clock::now() - changed).count() > hang_seconds) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            out.failure.kind = "hang";
            out.failure.key = "watchdog";
            out.failure.detail = "no op finished for " + std::to_string(hang_seconds) +
                                 " s (the op in flight is the trace's last)";
            out.failure.op = 0;
            return out;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFSIGNALED(status)) {
        out.failure.kind = "crash";
        out.failure.key = signal_name(WTERMSIG(status));
        out.failure.detail = std::string("the walker died of ") + signal_name(WTERMSIG(status)) +
                             " (the op in flight is the trace's last)";
        return out;
    }
    if (WEXITSTATUS(status) != 0 && region.shared->finished == 0) {
        out.failure.kind = "crash";
        out.failure.key = "exit";
        out.failure.detail = "the walker exited with status " +
                             std::to_string(WEXITSTATUS(status)) +
                             " (a sanitizer report, see stderr)";
        return out;
    }
    out.result = region.shared->result;
    const char *f = region.shared->result + out.result.size() + 1;
    std::string text = f;
    if (!text.empty()) {
        std::istringstream in(text);
        std::string op;
        std::getline(in, out.failure.kind, '\t');
        std::getline(in, out.failure.key, '\t');
        std::getline(in, op, '\t');
        std::getline(in, out.failure.detail);
        out.failure.op = std::strtoull(op.c_str(), nullptr, 10);
    }
    return out;
}

void publish(Region &region, const WorldRun &run, double seconds, int failed_thread)
{
    std::string json = "\"ops\": " + std::to_string(run.ops) + ", \"skipped\": " +
                       std::to_string(run.skipped) + ", \"seconds\": " + std::to_string(seconds) +
                       ", \"statuses\": " + counts_json(run.statuses) + ", \"warnings\": " +
                       map_json(run.warnings) + ", \"intended\": " + map_json(run.intended);
    std::string fail;
    if (run.failure.failed())
        fail = run.failure.kind + "\t" + run.failure.key + "\t" + std::to_string(run.failure.op) +
               "\t" + run.failure.detail;
    if (json.size() + fail.size() + 2 > kResultBytes)
        json = "\"ops\": " + std::to_string(run.ops);
    std::memcpy(region.shared->result, json.c_str(), json.size() + 1);
    std::memcpy(region.shared->result + json.size() + 1, fail.c_str(), fail.size() + 1);
    region.shared->failed_thread = failed_thread;
    region.shared->finished = 1;
}

// --- traces on disk ------------------------------------------------------------------------

void write_trace(const std::string &path, const Config &config,
                 const std::vector<std::string> &options, const std::vector<Op> &ops,
                 const Failure &failure)
{
    std::ofstream out(path);
    out << "{\"walk\": 1, \"provider\": \"" << json_escape(config.provider)
        << "\", \"seed\": " << config.seed << ", \"thread\": " << config.thread_index
        << ", \"options\": \"" << json_escape(options_text(options)) << "\", \"signature\": \""
        << json_escape(failure.signature()) << "\", \"detail\": \"" << json_escape(failure.detail)
        << "\"}\n";
    for (const auto &op : ops)
        out << op_to_json(op) << "\n";
}

std::string header_field(const std::string &line, const std::string &key)
{
    auto at = line.find("\"" + key + "\"");
    if (at == std::string::npos)
        return {};
    at = line.find(':', at) + 1;
    while (line[at] == ' ')
        ++at;
    if (line[at] == '"') {
        std::string out;
        for (size_t i = at + 1; i < line.size() && line[i] != '"'; ++i) {
            if (line[i] == '\\' && i + 1 < line.size()) {
                ++i;
                out += line[i] == 'n' ? '\n' : line[i];
            } else {
                out += line[i];
            }
        }
        return out;
    }
    size_t end = line.find_first_of(",}", at);
    return line.substr(at, end - at);
}

bool read_trace(const std::string &path, Config &config, std::vector<std::string> &options,
                std::vector<Op> &ops, std::string &signature)
{
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line) || header_field(line, "walk").empty())
        return false;
    config.provider = header_field(line, "provider");
    config.seed = std::strtoull(header_field(line, "seed").c_str(), nullptr, 10);
    config.thread_index = std::atoi(header_field(line, "thread").c_str());
    options = options_parse(header_field(line, "options"));
    signature = header_field(line, "signature");
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        auto op = op_from_json(line);
        if (!op)
            return false;
        ops.push_back(*op);
    }
    return true;
}

// --- shrinking -----------------------------------------------------------------------------

struct Shrinker {
    Config config;
    std::vector<std::string> options;
    std::string signature;
    Region *region;
    Clock::time_point deadline;
    int tests = 0;

    bool fails(const std::vector<Op> &ops)
    {
        ++tests;
        Config c = config;
        auto outcome = run_child(*region, config.hang_seconds, [&] {
            auto run = replay_world(c, ops, options, &region->shared->count[0]);
            publish(*region, run, 0, 0);
        });
        return outcome.failure.signature() == signature;
    }

    // `ops` without the ops its replay skips (their objects' creation was shrunk away, or their
    // buffers busy) and those after the failure: they change nothing here, but a scenario
    // replaying the trace through the Python API runs every line it is given.  `ops` itself
    // when the shorter trace does not fail the same way.
    std::vector<Op> executed_only(const std::vector<Op> &ops)
    {
        Region scratch = map_region(1, ops.size());
        Config c = config;
        run_child(scratch, config.hang_seconds, [&] {
            Op *out = scratch.trace(0);
            auto run = replay_world(c, ops, options, &scratch.shared->count[0], [&](const Op &op) {
                out[scratch.shared->executed++] = op;
            });
            publish(scratch, run, 0, 0);
        });
        std::vector<Op> ran(scratch.trace(0), scratch.trace(0) + scratch.shared->executed);
        munmap(scratch.shared, sizeof(Shared) + sizeof(Op) * scratch.cap);
        if (ran.size() == ops.size() || ran.empty() || !fails(ran))
            return ops;
        return ran;
    }

    // Delta debugging (ddmin, complements only), bounded by the deadline.
    std::vector<Op> shrink(std::vector<Op> ops)
    {
        size_t n = 2;
        while (ops.size() >= 2 && Clock::now() < deadline) {
            size_t chunk = (ops.size() + n - 1) / n;
            bool reduced = false;
            for (size_t start = 0; start < ops.size() && Clock::now() < deadline; start += chunk) {
                std::vector<Op> candidate(ops.begin(), ops.begin() + start);
                if (start + chunk < ops.size())
                    candidate.insert(candidate.end(), ops.begin() + start + chunk, ops.end());
                if (fails(candidate)) {
                    ops = std::move(candidate);
                    n = std::max<size_t>(n - 1, 2);
                    reduced = true;
                    break;
                }
            }
            if (!reduced) {
                if (n >= ops.size())
                    break;
                n = std::min(ops.size(), n * 2);
            }
        }
        // one op at a time, last pass (cheap once the trace is small)
        for (size_t i = ops.size(); i-- > 0 && Clock::now() < deadline && ops.size() > 1;) {
            std::vector<Op> candidate = ops;
            candidate.erase(candidate.begin() + i);
            if (fails(candidate))
                ops = std::move(candidate);
        }
        return ops;
    }
};

// --- commands ------------------------------------------------------------------------------

int usage(std::FILE *out = stderr)
{
    std::fprintf(out,
                 "usage: ndk_walk run [--provider P] [--seconds N] [--ops N] [--seed S] "
                 "[--threads T] [--out DIR] [--no-shrink] [--shrink-seconds N] "
                 "[--hang-seconds N]\n"
                 "       ndk_walk replay TRACE | ndk_walk shrink TRACE [--out DIR]\n");
    return out == stderr ? 2 : 0;
}

struct Parsed {
    Config config;
    std::vector<std::string> positional;
};

// A whole number within [lo, hi], digits only (stoull takes "-5" and wraps it), else
// invalid_argument naming the option and its range.
uint64_t whole(const std::string &option, const std::string &text, uint64_t lo, uint64_t hi)
{
    size_t used = 0;
    uint64_t n = 0;
    try {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
            throw std::invalid_argument(text);
        n = std::stoull(text, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used == 0 || n < lo || n > hi)
        throw std::invalid_argument(option + " " + text + ": expected a whole number in " +
                                    std::to_string(lo) + ".." + std::to_string(hi));
    return n;
}

// A time in seconds, more than 0 and at most a week, else invalid_argument.
double seconds(const std::string &option, const std::string &text)
{
    char *end = nullptr;
    double s = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(s > 0 && s <= 7 * 24 * 3600.0))
        throw std::invalid_argument(option + " " + text +
                                    ": expected seconds, more than 0 and at most 604800");
    return s;
}

// A folder that exists, else invalid_argument: a failure's traces go there, and none is made.
std::string existing_folder(const std::string &option, const std::string &text)
{
    struct stat st {};
    if (text.empty() || ::stat(text.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw std::invalid_argument(option + " " + text + ": not a folder that exists");
    return text;
}

bool parse(int argc, char **argv, Parsed &p)
{
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        try {
            if (a == "--provider")
                p.config.provider = value();
            else if (a == "--seconds")
                p.config.seconds = seconds(a, value());
            else if (a == "--ops")
                p.config.max_ops = whole(a, value(), 1, UINT64_MAX >> 1);
            else if (a == "--seed")
                p.config.seed = whole(a, value(), 0, UINT64_MAX);
            else if (a == "--threads")
                p.config.threads = static_cast<int>(whole(a, value(), 1, kMaxThreads));
            else if (a == "--out")
                p.config.out_dir = existing_folder(a, value());
            else if (a == "--no-shrink")
                p.config.shrink = false;
            else if (a == "--shrink-seconds")
                p.config.shrink_seconds = seconds(a, value());
            else if (a == "--hang-seconds")
                p.config.hang_seconds = seconds(a, value());
            else if (a == "--wait-seconds")
                p.config.wait_seconds = seconds(a, value());
            else if (a == "--inject-failure-at")
                p.config.inject_failure_at = whole(a, value(), 1, UINT64_MAX >> 1);
            else if (a == "--misbehave")
                p.config.misbehave = value();
            else if (a == "--create-mode")
                p.config.create_mode = value();
            else if (!a.empty() && a[0] == '-')
                throw std::invalid_argument("unknown option " + a);
            else
                p.positional.push_back(a);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "ndk_walk: %s\n", e.what());
            return false;
        }
    }
    return true;
}

// After a failure: write the raw trace, shrink it, write the minimal one; the JSON fields.
std::string report_failure(const Config &config, const std::vector<std::string> &options,
                           std::vector<Op> trace, const Failure &failure, Region &region)
{
    std::string stem = config.out_dir + "/walk-" + std::to_string(config.seed) +
                       (config.threads > 1 ? "-t" + std::to_string(config.thread_index) : "");
    std::string raw = stem + ".trace.jsonl";
    write_trace(raw, config, options, trace, failure);
    std::string json = ", \"trace\": \"" + json_escape(raw) + "\", \"trace_ops\": " +
                       std::to_string(trace.size());
    if (!config.shrink)
        return json;
    auto start = Clock::now();
    Shrinker s{config, options, failure.signature(), &region,
               start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(config.shrink_seconds))};
    Config one = config;
    s.config = one;
    if (!s.fails(trace)) {
        return json + ", \"shrunk\": null, \"shrink_note\": \"the trace replayed in one thread "
                      "does not reproduce " +
               json_escape(failure.signature()) + "\"";
    }
    auto small = s.executed_only(s.shrink(trace));
    std::string min = stem + ".min.jsonl";
    write_trace(min, config, options, small, failure);
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    return json + ", \"shrunk\": \"" + json_escape(min) + "\", \"shrunk_ops\": " +
           std::to_string(small.size()) + ", \"shrink_runs\": " + std::to_string(s.tests) +
           ", \"shrink_seconds\": " + std::to_string(secs);
}

int cmd_run(const Config &config)
{
    // per-thread trace capacity: generous, untouched pages cost nothing (MAP_NORESERVE)
    size_t cap = config.max_ops ? config.max_ops + 16 : static_cast<size_t>(64) << 20;
    cap = std::min<size_t>(cap, (static_cast<size_t>(256) << 20) / config.threads);
    Region region = map_region(config.threads, cap);
    auto started = Clock::now();
    auto outcome = run_child(region, config.hang_seconds, [&] {
        auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(config.seconds));
        std::vector<WorldRun> runs(config.threads);
        std::vector<std::thread> threads;
        auto t0 = Clock::now();
        for (int t = 0; t < config.threads; ++t)
            threads.emplace_back([&, t] {
                Config c = config;
                c.thread_index = t;
                runs[t] = walk_world(c, region.trace(t), region.cap, region.shared->count[t],
                                     deadline, config.max_ops);
            });
        for (auto &th : threads)
            th.join();
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        WorldRun all;
        int failed = -1;
        for (int t = 0; t < config.threads; ++t) {
            all.ops += runs[t].ops;
            all.skipped += runs[t].skipped;
            for (const auto &[fn, m] : runs[t].statuses)
                for (const auto &[s, n] : m)
                    all.statuses[fn][s] += n;
            for (const auto &[k, n] : runs[t].warnings)
                all.warnings[k] += n;
            for (const auto &[k, n] : runs[t].intended)
                all.intended[k] += n;
            if (runs[t].failure.failed() && failed < 0) {
                failed = t;
                all.failure = runs[t].failure;
            }
        }
        publish(region, all, secs, failed);
    });
    double wall = std::chrono::duration<double>(Clock::now() - started).count();
    int failed_thread = outcome.failure.failed() && region.shared->failed_thread >= 0
                            ? region.shared->failed_thread
                            : 0;
    if (outcome.failure.failed() && region.shared->failed_thread < 0) {
        // a crash or hang: blame the thread whose last op is the latest (one thread: thread 0)
        failed_thread = 0;
    }
    std::string body = outcome.result.empty() ? "\"ops\": 0" : outcome.result;
    uint64_t recorded = region.shared->count[failed_thread].load();
    std::string json = "{\"provider\": \"" + json_escape(config.provider) + "\", \"seed\": " +
                       std::to_string(config.seed) + ", \"threads\": " +
                       std::to_string(config.threads) + ", \"wall_seconds\": " +
                       std::to_string(wall) + ", " + body + ", \"failure\": " +
                       failure_json(outcome.failure);
    if (outcome.failure.failed()) {
        Config c = config;
        c.thread_index = failed_thread;
        uint64_t last = outcome.failure.op ? outcome.failure.op : recorded;
        std::vector<Op> trace(region.trace(failed_thread),
                              region.trace(failed_thread) + std::min<uint64_t>(last, region.cap));
        json += ", \"failed_thread\": " + std::to_string(failed_thread);
        json += report_failure(c, World::default_options(c), std::move(trace), outcome.failure,
                               region);
    }
    std::printf("%s}\n", json.c_str());
    return outcome.failure.failed() ? 1 : 0;
}

int cmd_replay(const std::string &path, Config config, bool shrink)
{
    std::vector<std::string> options;
    std::vector<Op> ops;
    std::string signature;
    Config from_file = config;
    if (!read_trace(path, from_file, options, ops, signature)) {
        std::fprintf(stderr, "ndk_walk: %s is not a walk trace\n", path.c_str());
        return 2;
    }
    from_file.out_dir = config.out_dir;
    from_file.shrink_seconds = config.shrink_seconds;
    from_file.hang_seconds = config.hang_seconds;
    from_file.shrink = true;
    Region region = map_region(1, 16);
    auto outcome = run_child(region, from_file.hang_seconds, [&] {
        auto t0 = Clock::now();
        auto run = replay_world(from_file, ops, options, &region.shared->count[0]);
        publish(region, run, std::chrono::duration<double>(Clock::now() - t0).count(), 0);
    });
    std::string json = "{\"provider\": \"" + json_escape(from_file.provider) + "\", \"trace\": \"" +
                       json_escape(path) + "\", " +
                       (outcome.result.empty() ? "\"ops\": 0" : outcome.result) +
                       ", \"failure\": " + failure_json(outcome.failure) +
                       ", \"recorded_signature\": \"" + json_escape(signature) + "\"";
    if (shrink && outcome.failure.failed())
        json += report_failure(from_file, options, ops, outcome.failure, region);
    else // the trace replayed is the raw trace: its length, as report_failure gives it
        json += ", \"trace_ops\": " + std::to_string(ops.size());
    std::printf("%s}\n", json.c_str());
    return outcome.failure.failed() ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    std::string command = argv[1];
    if (command == "--help" || command == "-h")  // help2man reads this (core/packaging/man/)
        return usage(stdout);
    Parsed p;
    if (!parse(argc, argv, p))
        return usage();
    if (command == "run")
        return cmd_run(p.config);
    if ((command == "replay" || command == "shrink") && p.positional.size() == 1)
        return cmd_replay(p.positional[0], p.config, command == "shrink");
    return usage();
}
