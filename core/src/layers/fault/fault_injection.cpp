// The fault layer's knob state, set and read through its knob table (fault_knob_table.cpp), the
// `misbehave` names it acts, and the thread that delivers the completions its knobs defer.
#include "layers/fault/fault_layer.hpp"

#include "ndk/fault.hpp"

#include <algorithm>
#include <chrono>

namespace ndk::fault {

namespace {

const MisbehaveName kMisbehaves[] = {
    {"none", Misbehave::None},
    {"complete_after_inline", Misbehave::CompleteAfterInline},
    {"complete_twice", Misbehave::CompleteTwice},
    {"never_complete", Misbehave::NeverComplete},
    {"out_param_after_pending", Misbehave::OutParamAfterPending},
    {"out_param_missing_inline", Misbehave::OutParamMissingInline},
    {"request_complete_after_inline", Misbehave::RequestCompleteAfterInline},
    {"request_complete_twice", Misbehave::RequestCompleteTwice},
    {"request_never_complete", Misbehave::RequestNeverComplete},
    {"header_version", Misbehave::HeaderVersion},
    {"header_type", Misbehave::HeaderType},
    {"header_reserved", Misbehave::HeaderReserved},
    {"dispatch_null", Misbehave::DispatchNull},
    {"undocumented_status", Misbehave::UndocumentedStatus},
    {"moderation_pending", Misbehave::ModerationPending},
    {"moderation_not_supported", Misbehave::ModerationNotSupported},
    {"provider_error_code", Misbehave::ProviderErrorCode},
    {"notify_twice", Misbehave::NotifyTwice},
    {"drop_invalidate_token", Misbehave::DropInvalidateToken},
    {"complete_silent", Misbehave::CompleteSilent},
    {"drop_completion", Misbehave::DropCompletion},
    {"reorder_completions", Misbehave::ReorderCompletions},
};

// set_hold_interrupted's check, for every miniport of the process.
std::atomic<HoldInterrupted> hold_interrupted{nullptr};

// The closing flags of what this thread's calls in progress are on (enter_closable).
thread_local std::vector<const std::atomic<bool> *> closables;

// Every Injection of the process, for wake_holds().
std::mutex injections_mu;
std::set<Injection *> &injections()
{
    static std::set<Injection *> all;
    return all;
}

} // namespace

std::span<const MisbehaveName> misbehave_table() { return kMisbehaves; }

void enter_closable(const std::atomic<bool> *closing) { closables.push_back(closing); }

void leave_closable(const std::atomic<bool> *closing)
{
    auto at = std::find(closables.rbegin(), closables.rend(), closing);
    if (at != closables.rend())
        closables.erase(std::next(at).base());
}

void wake_holds()
{
    std::lock_guard lock(injections_mu);
    for (Injection *injection : injections())
        injection->wake();
}

Injection::Injection()
{
    std::lock_guard lock(injections_mu);
    injections().insert(this);
}

Injection::~Injection()
{
    std::lock_guard lock(injections_mu);
    injections().erase(this);
}

void Injection::wake()
{
    { std::lock_guard lock(mu_); } // a held call between its check and its wait hears this
    cv_.notify_all();
}


bool Injection::is_misbehave(const std::string &name)
{
    for (const MisbehaveName &m : kMisbehaves)
        if (name == m.name)
            return true;
    return false;
}

std::vector<std::string> Injection::misbehave_names()
{
    std::vector<std::string> names;
    for (const MisbehaveName &m : kMisbehaves)
        if (m.value != Misbehave::None)
            names.push_back(m.name);
    return names;
}

void Injection::update_active()
{
    active_.store(!failures_.empty() || !hold_.empty() || !caught_.empty() ||
                      modes_.create != Mode::Inline || modes_.request != Mode::Inline ||
                      modes_.close != Mode::Inline ||
                      misbehave_.load(std::memory_order_acquire) != Misbehave::None,
                  std::memory_order_release);
}

NTSTATUS Injection::set(const std::string &key, const std::string &value, std::string &reply)
{
    const Knob *knob = find_knob(key);
    if (knob == nullptr)
        return STATUS_NOT_SUPPORTED;
    std::lock_guard lock(mu_);
    reply = knob->set != nullptr ? knob->set(*this, key, value) : "read only";
    if (!reply.empty())
        return STATUS_INVALID_PARAMETER;
    update_active();
    return STATUS_SUCCESS;
}

NTSTATUS Injection::get(const std::string &key, std::string &value) const
{
    const Knob *knob = find_knob(key);
    if (knob == nullptr)
        return STATUS_NOT_SUPPORTED;
    std::lock_guard lock(mu_);
    value = knob->get(*this, key);
    return STATUS_SUCCESS;
}

std::optional<ArmedFailure> Injection::take_failure(std::string_view function)
{
    std::lock_guard lock(mu_);
    auto it = failures_.find(function);
    if (it == failures_.end())
        return std::nullopt;
    ArmedFailure failure = it->second;
    if (it->second.remaining > 0 && --it->second.remaining == 0) {
        failures_.erase(it);
        update_active();
    }
    return failure;
}

void set_hold_interrupted(HoldInterrupted check)
{
    hold_interrupted.store(check, std::memory_order_release);
}

bool Injection::should_pend(Kind kind)
{
    std::lock_guard lock(mu_);
    Mode mode = kind == Kind::Create    ? modes_.create
                : kind == Kind::Request ? modes_.request
                                        : modes_.close;
    if (mode == Mode::Random)
        return (random_() & 1) != 0;
    return mode == Mode::Pending;
}

bool Injection::enter(const FaultAdapter *adapter, std::string_view function)
{
    std::unique_lock lock(mu_);
    if (hold_.empty() || hold_ != function)
        return false;
    hold_.clear();
    caught_.insert(adapter);
    update_active();
    const uint64_t generation = release_generation_;
    // The objects the call is on stay alive until it returns: the consumer holds them.
    const std::vector<const std::atomic<bool> *> on = closables;
    auto released = [&] {
        return release_generation_ != generation || closing_.count(adapter) != 0 ||
               std::any_of(on.begin(), on.end(), [](auto *closing) { return closing->load(); });
    };
    ++held_;
    while (!released()) {
        HoldInterrupted interrupted = hold_interrupted.load(std::memory_order_acquire);
        if (interrupted == nullptr) {
            cv_.wait(lock, released);
            break;
        }
        if (cv_.wait_for(lock, std::chrono::milliseconds(50), released))
            break;
        lock.unlock(); // the check may take the interpreter's lock: never under mu_
        const bool stop = interrupted();
        lock.lock();
        if (stop)
            break;
    }
    --held_;
    return true;
}

void Injection::returned(const FaultAdapter *adapter)
{
    std::lock_guard lock(mu_);
    caught_.erase(caught_.find(adapter));
    update_active();
    cv_.notify_all();
}

void Injection::release_adapter(const FaultAdapter *adapter)
{
    std::unique_lock lock(mu_);
    closing_.insert(adapter);
    cv_.notify_all();
    cv_.wait(lock, [&] { return caught_.count(adapter) == 0; });
    closing_.erase(adapter);
}

// ---- Deferrer ------------------------------------------------------------------------------

namespace {

// Every deferrer of the process, for all_idle().
std::mutex deferrers_mu;
std::set<Deferrer *> &deferrers()
{
    static std::set<Deferrer *> all;
    return all;
}

} // namespace

Deferrer::Deferrer()
{
    std::lock_guard lock(deferrers_mu);
    deferrers().insert(this);
}

bool Deferrer::all_idle()
{
    std::lock_guard lock(deferrers_mu);
    for (Deferrer *deferrer : deferrers()) {
        std::lock_guard own(deferrer->mu_);
        if (!deferrer->jobs_.empty() || deferrer->running_ != nullptr)
            return false;
    }
    return true;
}

Deferrer::~Deferrer()
{
    {
        std::lock_guard lock(deferrers_mu);
        deferrers().erase(this);
    }
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

uint64_t Deferrer::reserve(const FaultAdapter *adapter)
{
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) {
        thread_ = std::thread([this] { run(); });
        thread_id_ = thread_.get_id();
    }
    jobs_.push_back(Entry{next_slot_, adapter, {}, false});
    queued_.store(jobs_.size(), std::memory_order_release);
    return next_slot_++;
}

void Deferrer::fill(uint64_t slot, Job job)
{
    std::lock_guard lock(mu_);
    for (Entry &entry : jobs_)
        if (entry.slot == slot) {
            entry.job = std::move(job);
            entry.ready = true;
        }
    cv_.notify_all();
}

void Deferrer::cancel(uint64_t slot)
{
    std::lock_guard lock(mu_);
    std::erase_if(jobs_, [slot](const Entry &entry) { return entry.slot == slot; });
    queued_.store(jobs_.size(), std::memory_order_release);
    cv_.notify_all();
}

bool Deferrer::has(const FaultAdapter *adapter) const
{
    if (running_ == adapter)
        return true;
    return std::any_of(jobs_.begin(), jobs_.end(),
                       [adapter](const Entry &entry) { return entry.adapter == adapter; });
}

bool Deferrer::post_if_behind(const FaultAdapter *adapter, Job &job)
{
    if (queued_.load(std::memory_order_acquire) == 0)
        return false; // nothing deferred anywhere: the common case, without the lock
    std::lock_guard lock(mu_);
    // The deferrer's own thread, running a job of this adapter's, delivers directly: it is
    // already in order.
    if (std::this_thread::get_id() == thread_id_ || !has(adapter))
        return false;
    jobs_.push_back(Entry{next_slot_++, adapter, std::move(job), true});
    queued_.store(jobs_.size(), std::memory_order_release);
    cv_.notify_all();
    return true;
}

bool Deferrer::busy(const FaultAdapter *adapter)
{
    std::lock_guard lock(mu_); // a close, not a hot path
    return std::this_thread::get_id() != thread_id_ && has(adapter);
}

void Deferrer::run()
{
    std::unique_lock lock(mu_);
    for (;;) {
        cv_.wait(lock, [&] {
            return (stop_ && jobs_.empty()) || (!jobs_.empty() && jobs_.front().ready && !manual_);
        });
        if (jobs_.empty())
            return;
        run_job(lock, jobs_.begin());
    }
}

void Deferrer::run_job(std::unique_lock<std::mutex> &lock, std::deque<Entry>::iterator at)
{
    Entry entry = std::move(*at);
    jobs_.erase(at);
    running_ = entry.adapter;
    lock.unlock();
    entry.job();
    lock.lock();
    running_ = nullptr;
    queued_.store(jobs_.size(), std::memory_order_release);
    cv_.notify_all();
}

void Deferrer::set_manual(bool manual)
{
    std::lock_guard lock(mu_);
    manual_ = manual;
    cv_.notify_all();
}

size_t Deferrer::queued()
{
    std::lock_guard lock(mu_);
    return jobs_.size();
}

unsigned Deferrer::step(unsigned steps)
{
    std::unique_lock lock(mu_);
    unsigned ran = 0;
    for (; manual_ && ran < steps && !jobs_.empty() && jobs_.front().ready && running_ == nullptr;
         ++ran)
        run_job(lock, jobs_.begin());
    return ran;
}

void Deferrer::drain(const FaultAdapter *adapter)
{
    std::unique_lock lock(mu_);
    if (manual_ && std::this_thread::get_id() != thread_id_) {
        // Nothing runs on its own: the adapter's completions run here, in order.
        for (;;) {
            auto it = std::find_if(jobs_.begin(), jobs_.end(),
                                   [adapter](const Entry &entry) { return entry.adapter == adapter; });
            if (it == jobs_.end()) {
                if (running_ != adapter)
                    return;
                cv_.wait(lock);
                continue;
            }
            if (!it->ready || running_ != nullptr) {
                cv_.wait(lock);
                continue;
            }
            run_job(lock, it);
        }
    }
    if (std::this_thread::get_id() == thread_id_) {
        // Closed from inside a deferred completion: run what is left of it here, in order.
        for (auto it = jobs_.begin(); it != jobs_.end();) {
            if (it->adapter != adapter || !it->ready) {
                ++it;
                continue;
            }
            Job job = std::move(it->job);
            jobs_.erase(it);
            queued_.store(jobs_.size(), std::memory_order_release);
            lock.unlock();
            job();
            lock.lock();
            it = jobs_.begin();
        }
        return;
    }
    cv_.wait(lock, [&] { return !has(adapter); });
}

} // namespace ndk::fault
