// The three ways a call completes (digest 1.0): every create, request and close goes through
// here, so the completion rules are judged in one place.  A completion the contract forbids
// (after an inline return, a second one, one after the close) is recorded and not delivered:
// the consumer has already let go of what its context points to.
#include "layers/validate/validate_layer.hpp"

#include <cstdio>

namespace ndk::validate {

namespace {

char unwritten_marker;
void *const kUnwritten = &unwritten_marker; // the out-parameter slot before the provider writes

std::string status_text(NTSTATUS status)
{
    char text[16];
    std::snprintf(text, sizeof text, "0x%08X", static_cast<unsigned>(status));
    return text;
}

const char *close_name(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeQp: return "NdkCloseQp";
    case NdkObjectTypeCq: return "NdkCloseCq";
    case NdkObjectTypeMr: return "NdkCloseMr";
    case NdkObjectTypeMw: return "NdkCloseMw";
    case NdkObjectTypePd: return "NdkClosePd";
    case NdkObjectTypeSharedEndpoint: return "NdkCloseSharedEndpoint";
    case NdkObjectTypeConnector: return "NdkCloseConnector";
    case NdkObjectTypeListener: return "NdkCloseListener";
    case NdkObjectTypeSrq: return "NdkCloseSrq";
    default: return "NdkCloseObject";
    }
}

void report_on(CallRecord &rec, LayerAdapter &adapter, const char *rule, std::string message)
{
    adapter.report(rule, rec.target ? rec.target->name() : "adapter", rec.function,
                   std::move(message));
}

// A completion that arrives before its call returned: on the calling thread (the provider
// completed inside the call), it is held and delivered once the call returned STATUS_PENDING;
// on another thread, the provider has let go of the call, so wait for the caller to record the
// return and go on in order (holding would let the provider's later callbacks overtake it).
// True when the completion must be held.
bool hold_until_returned(CallRecord &rec, std::unique_lock<std::mutex> &lock)
{
    if (rec.returned)
        return false;
    if (std::this_thread::get_id() == rec.caller)
        return true;
    rec.cv.wait_for(lock, std::chrono::seconds(2), [&] { return rec.returned; });
    return !rec.returned;
}

void mark_returned(CallRecord &rec, NTSTATUS status)
{
    rec.returned = true;
    rec.inline_status = status;
    rec.since = std::chrono::steady_clock::now();
    rec.cv.notify_all();
}

// ---- create --------------------------------------------------------------------------------

void deliver_create(CallRecord &rec, NTSTATUS status, NDK_OBJECT_HEADER *object)
{
    Shadow &made = *rec.target;
    LayerAdapter &adapter = made.adapter();
    if (rec.out_slot != kUnwritten)
        report_on(rec, adapter, "CREATE-OUT-PARAM-PENDING",
                  "the out-parameter was written although the create returned STATUS_PENDING");
    check_documented(&made, adapter, rec.function, status);
    void *face = nullptr;
    if (status == STATUS_SUCCESS && object != nullptr) {
        made.bind(object, rec.function);
        face = made.face();
    } else {
        made.set_state(State::Closed); // it never existed
    }
    if (rec.on_done)
        rec.on_done(status);
    rec.create_completion(rec.consumer_context, status, static_cast<NDK_OBJECT_HEADER *>(face));
}

void create_done(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER *object)
{
    auto &rec = *static_cast<CallRecord *>(context);
    LayerAdapter &adapter = rec.target->adapter();
    std::unique_lock lock(rec.mu);
    if (++rec.completions > 1) {
        report_on(rec, adapter, "CREATE-COMPLETION-TWICE",
                  "create completion called " + std::to_string(rec.completions) + " times");
        return;
    }
    if (hold_until_returned(rec, lock)) { // run_create delivers it after STATUS_PENDING
        rec.held = true;
        rec.held_status = status;
        rec.held_object = object;
        return;
    }
    if (rec.inline_status != STATUS_PENDING) {
        report_on(rec, adapter, "CREATE-COMPLETION-INLINE",
                  "create completion called although the create returned " +
                      status_text(rec.inline_status));
        return;
    }
    lock.unlock();
    deliver_create(rec, status, object);
}

// ---- request -------------------------------------------------------------------------------

void deliver_request(CallRecord &rec, LayerAdapter &adapter, NTSTATUS status)
{
    if (rec.target != nullptr && !rec.target->accepts_callback(rec.function))
        return;
    check_documented(rec.target, adapter, rec.function, status);
    if (rec.on_done)
        rec.on_done(status);
    if (rec.request_completion != nullptr)
        rec.request_completion(rec.consumer_context, status);
}

void request_done(PVOID context, NTSTATUS status)
{
    auto &rec = *static_cast<CallRecord *>(context);
    LayerAdapter &adapter = *static_cast<LayerAdapter *>(rec.out_slot); // see run_request
    std::unique_lock lock(rec.mu);
    if (++rec.completions > 1) {
        report_on(rec, adapter, "REQUEST-COMPLETION-TWICE",
                  "request completion called " + std::to_string(rec.completions) + " times");
        return;
    }
    if (hold_until_returned(rec, lock)) {
        rec.held = true;
        rec.held_status = status;
        return;
    }
    if (rec.inline_status != STATUS_PENDING) {
        report_on(rec, adapter, "REQUEST-COMPLETION-INLINE",
                  "request completion called although the request returned " +
                      status_text(rec.inline_status));
        return;
    }
    lock.unlock();
    deliver_request(rec, adapter, status);
}

// ---- close ---------------------------------------------------------------------------------

void finish_close(Shadow &s, const char *function)
{
    s.set_state(State::Completing);
    s.check_successors_closed(function);
}

void deliver_close(CallRecord &rec)
{
    Shadow &s = *rec.target;
    finish_close(s, rec.function);
    if (rec.close_completion != nullptr)
        rec.close_completion(rec.consumer_context);
    s.set_state(State::Closed);
}

void close_done(PVOID context)
{
    auto &rec = *static_cast<CallRecord *>(context);
    LayerAdapter &adapter = rec.target->adapter();
    std::unique_lock lock(rec.mu);
    if (++rec.completions > 1) {
        report_on(rec, adapter, "CALLBACK-AFTER-CLOSE",
                  "close completion called " + std::to_string(rec.completions) + " times");
        return;
    }
    if (hold_until_returned(rec, lock)) {
        rec.held = true;
        rec.target->close_held = true;
        return;
    }
    if (rec.inline_status != STATUS_PENDING) {
        report_on(rec, adapter, "CALLBACK-AFTER-CLOSE",
                  "close completion called although the close returned " +
                      status_text(rec.inline_status));
        return;
    }
    lock.unlock();
    deliver_close(rec);
}

} // namespace

CallRecord &LayerAdapter::new_call(CallRecord::Kind kind, const char *function, Shadow *target)
{
    std::lock_guard lock(mu_);
    CallRecord &rec = calls_.emplace_back();
    rec.kind = kind;
    rec.function = function;
    rec.target = target;
    rec.since = std::chrono::steady_clock::now();
    rec.caller = std::this_thread::get_id();
    return rec;
}

NTSTATUS run_create(LayerAdapter &adapter, Shadow &made, const char *function,
                    NDK_FN_CREATE_COMPLETION completion, PVOID context, void **consumer_out,
                    const std::function<NTSTATUS(NDK_FN_CREATE_COMPLETION, PVOID, void **)>
                        &invoke,
                    std::function<void(NTSTATUS)> on_done)
{
    CallRecord &rec = adapter.new_call(CallRecord::Kind::Create, function, &made);
    rec.on_done = std::move(on_done);
    rec.create_completion = completion;
    rec.consumer_context = context;
    rec.out_slot = kUnwritten;
    NTSTATUS status = invoke(create_done, &rec, &rec.out_slot);
    std::unique_lock lock(rec.mu);
    mark_returned(rec, status);
    if (status == STATUS_PENDING) {
        if (rec.out_slot != kUnwritten) {
            report_on(rec, adapter, "CREATE-OUT-PARAM-PENDING",
                      "the out-parameter was written although the create returned "
                      "STATUS_PENDING");
            rec.out_slot = kUnwritten; // reported once
        }
        check_documented(&made, adapter, function, status);
        if (rec.held) {
            lock.unlock();
            deliver_create(rec, rec.held_status, rec.held_object);
        }
        return status;
    }
    if (rec.held)
        report_on(rec, adapter, "CREATE-COMPLETION-INLINE",
                  "create completion called although the create returned " +
                      status_text(status));
    if (status == STATUS_SUCCESS && (rec.out_slot == kUnwritten || rec.out_slot == nullptr))
        report_on(rec, adapter, "CREATE-OUT-PARAM-INLINE",
                  "the create returned STATUS_SUCCESS inline without writing the new object "
                  "to its out-parameter");
    lock.unlock();
    check_documented(&made, adapter, function, status);
    auto *object = static_cast<NDK_OBJECT_HEADER *>(rec.out_slot);
    if (status == STATUS_SUCCESS && object != kUnwritten && object != nullptr) {
        made.bind(object, function);
        *consumer_out = made.face();
    } else {
        made.set_state(State::Closed); // it never existed
    }
    if (rec.on_done)
        rec.on_done(status);
    return status;
}

NTSTATUS run_request(LayerAdapter &adapter, Shadow *target, const char *function,
                     NDK_FN_REQUEST_COMPLETION completion, PVOID context,
                     const std::function<NTSTATUS(NDK_FN_REQUEST_COMPLETION, PVOID)> &invoke,
                     std::function<void(NTSTATUS)> on_done)
{
    CallRecord &rec = adapter.new_call(CallRecord::Kind::Request, function, target);
    rec.request_completion = completion;
    rec.consumer_context = context;
    rec.on_done = std::move(on_done);
    rec.out_slot = &adapter; // request_done finds its adapter here (target may be null)
    NTSTATUS status = invoke(request_done, &rec);
    std::unique_lock lock(rec.mu);
    mark_returned(rec, status);
    if (status == STATUS_PENDING) {
        check_documented(target, adapter, function, status);
        if (rec.held) {
            lock.unlock();
            deliver_request(rec, adapter, rec.held_status);
        }
        return status;
    }
    if (rec.held)
        report_on(rec, adapter, "REQUEST-COMPLETION-INLINE",
                  "request completion called although the request returned " +
                      status_text(status));
    lock.unlock();
    check_documented(target, adapter, function, status);
    if (rec.on_done)
        rec.on_done(status);
    return status;
}

NTSTATUS close_object(NDK_OBJECT_HEADER *object, NDK_FN_CLOSE_COMPLETION completion,
                      PVOID context)
{
    Shadow &s = Shadow::of(object);
    const char *function = close_name(s.type());
    if (s.state() != State::Open) {
        s.report("OBJECT-CLOSED-CALL", function, "the object was already closed; not forwarded");
        return STATUS_INVALID_DEVICE_STATE;
    }
    s.set_state(State::Closing);
    s.check_reserved(function);
    s.closing();
    if (!s.bound() || s.real_dispatch<void>() == nullptr) {
        s.set_state(State::Closed); // nothing the layer can forward the close to
        return STATUS_SUCCESS;
    }
    LayerAdapter &adapter = s.adapter();
    CallRecord &rec = adapter.new_call(CallRecord::Kind::Close, function, &s);
    rec.close_completion = completion;
    rec.consumer_context = context;
    auto close = s.real_dispatch<NDK_FN_CLOSE_OBJECT>()[0];
    NTSTATUS status = close(s.real(), close_done, &rec);
    std::unique_lock lock(rec.mu);
    mark_returned(rec, status);
    if (status == STATUS_PENDING) {
        if (rec.held) {
            lock.unlock();
            deliver_close(rec);
        }
        return status;
    }
    if (rec.held)
        report_on(rec, adapter, "CALLBACK-AFTER-CLOSE",
                  "close completion called although the close returned " + status_text(status));
    lock.unlock();
    check_documented(&s, adapter, function, status);
    // No close completion runs: straight to Closed (Completing would tell an antecedent's
    // close, completing meanwhile on the provider's thread, that a callback is running).
    s.check_successors_closed(function);
    s.set_state(State::Closed);
    return status;
}

void LayerAdapter::judge_overdue()
{
    auto timeout = miniport_.completion_timeout();
    auto now = std::chrono::steady_clock::now();
    std::vector<CallRecord *> overdue;
    {
        std::lock_guard lock(mu_);
        for (CallRecord &rec : calls_) {
            std::lock_guard rec_lock(rec.mu);
            if (rec.kind == CallRecord::Kind::Close || !rec.returned ||
                rec.inline_status != STATUS_PENDING || rec.completions > 0 ||
                rec.judged_missing)
                continue;
            if (!closed_ && now - rec.since < timeout)
                continue;
            rec.judged_missing = true;
            overdue.push_back(&rec);
        }
    }
    for (CallRecord *rec : overdue) {
        bool create = rec->kind == CallRecord::Kind::Create;
        report_on(*rec, *this,
                  create ? "CREATE-COMPLETION-MISSING" : "REQUEST-COMPLETION-MISSING",
                  std::string(create ? "create" : "request") +
                      " returned STATUS_PENDING and its completion never came " +
                      (closed_ ? std::string("before the adapter's close returned")
                               : "within validate_timeout_ms (" +
                                     std::to_string(timeout.count()) + " ms)"));
    }
}

void LayerAdapter::closed()
{
    {
        std::lock_guard lock(mu_);
        closed_ = true;
        for (auto &shadow : shadows_)
            shadow->set_state(State::Closed);
    }
    judge_overdue();
}

} // namespace ndk::validate
