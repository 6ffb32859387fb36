// The validation layer from Python (ndk/validation.hpp): ndk.Rule, ndk.Violation,
// ndk.ValidationSession, _core.rules(), and the raw escape hatch _core.raw (ndk.testing.raw)
// for scenarios that break a consumer rule on purpose.
#include "contexts.hpp"
#include "object_support.hpp"
#include "package_types.hpp"

#include "ndk/validation.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace ndk::py {
namespace {

using validate::Rule;
using validate::Session;
using validate::Severity;
using validate::Side;
using validate::Violation;

Side side_of(const std::string &name)
{
    if (name == "provider")
        return Side::Provider;
    if (name == "consumer")
        return Side::Consumer;
    throw pyb::value_error("side must be 'provider' or 'consumer', not '" + name + "'");
}

Severity severity_of(const std::string &name)
{
    if (name == "error")
        return Severity::Error;
    if (name == "warning")
        return Severity::Warning;
    throw pyb::value_error("severity must be 'error' or 'warning', not '" + name + "'");
}

std::string quoted(const std::string &text) { return pyb::repr(pyb::str(text)).cast<std::string>(); }

std::string violation_repr(const Violation &v)
{
    return "<ndk.Violation " + v.rule + " (" + validate::side_name(v.side) + " " +
           validate::severity_name(v.severity) + ", digest " + v.section + ") object=" +
           quoted(v.object) + " call=" + quoted(v.call) + " message=" + quoted(v.message) + ">";
}

auto violation_key(const Violation &v)
{
    return std::tie(v.rule, v.object, v.call, v.message, v.section, v.side, v.severity);
}

std::string rule_repr(const Rule &r)
{
    return std::string("<ndk.Rule ") + r.id + " (" + validate::side_name(r.side) + " " +
           validate::severity_name(r.severity) + ", digest " + r.section + ")>";
}

auto rule_key(const Rule &r)
{
    return std::make_tuple(std::string(r.id), r.side, r.severity, std::string(r.section),
                           std::string(r.summary));
}

// Raw calls skip the consumer's protections, so they are allowed only where the validation
// layer stands between them and the provider: without it, a call on a closed object reaches
// freed provider memory.
void require_validated(const Object &object, const char *function)
{
    if (object.adapter() && object.adapter()->validation())
        return;
    raise_package_error("ValidationRequired",
                        std::string("ndk.testing.raw.") + function +
                            " needs an object of a validated adapter (ndk.open_adapter(..., "
                            "validate=True)): it bypasses the consumer's checks, and without "
                            "the validation layer a call on a closed object reaches freed "
                            "provider memory");
}

} // namespace

std::vector<Violation> violations_of(Session &session)
{
    ReleasedGil released_gil;
    return session.violations();
}

void bind_validation(pyb::module_ &m)
{
    pyb::class_<Violation>(m, "Violation", R"doc(
One contract violation the validation layer recorded (docs/validation.md).

rule      the rule ID, e.g. "CREATE-COMPLETION-INLINE" (ndk.rules() lists them)
object    the object it concerns, e.g. "CQ#3" ("adapter" for the adapter itself)
call      the NDK function or callback, e.g. "NdkArmCq"
message   what happened, in words
section   the digest section the rule comes from
side      "provider" or "consumer": who broke the rule
severity  "error" or "warning" (a warning never fails a scenario)
)doc")
        .def(pyb::init([](std::string rule, std::string object, std::string call,
                          std::string message, std::string section, const std::string &side,
                          const std::string &severity) {
                 Violation v;
                 v.rule = std::move(rule);
                 v.object = std::move(object);
                 v.call = std::move(call);
                 v.message = std::move(message);
                 v.section = std::move(section);
                 v.side = side_of(side);
                 v.severity = severity_of(severity);
                 return v;
             }),
             pyb::arg("rule"), pyb::arg("object"), pyb::arg("call"), pyb::arg("message"),
             pyb::arg("section"), pyb::arg("side") = "provider", pyb::arg("severity") = "error",
             "A violation record by value (for comparisons; the layer makes the real ones).")
        .def_readonly("rule", &Violation::rule)
        .def_readonly("object", &Violation::object)
        .def_readonly("call", &Violation::call)
        .def_readonly("message", &Violation::message)
        .def_readonly("section", &Violation::section)
        .def_property_readonly("side", [](const Violation &v) { return validate::side_name(v.side); })
        .def_property_readonly("severity",
                               [](const Violation &v) { return validate::severity_name(v.severity); })
        .def("__eq__", [](const Violation &a, const Violation &b) {
            return violation_key(a) == violation_key(b);
        }, pyb::is_operator())
        .def("__hash__", [](const Violation &v) {
            return pyb::hash(pyb::make_tuple(v.rule, v.object, v.call, v.message, v.section,
                                             static_cast<int>(v.side),
                                             static_cast<int>(v.severity)));
        })
        .def("__repr__", &violation_repr)
        .def(pyb::pickle(
            [](const Violation &v) {
                return pyb::make_tuple(v.rule, v.object, v.call, v.message, v.section,
                                       validate::side_name(v.side),
                                       validate::severity_name(v.severity));
            },
            [](const pyb::tuple &state) {
                if (state.size() != 7)
                    throw pyb::value_error("not a pickled ndk.Violation");
                Violation v;
                v.rule = state[0].cast<std::string>();
                v.object = state[1].cast<std::string>();
                v.call = state[2].cast<std::string>();
                v.message = state[3].cast<std::string>();
                v.section = state[4].cast<std::string>();
                v.side = side_of(state[5].cast<std::string>());
                v.severity = severity_of(state[6].cast<std::string>());
                return v;
            }));

    pyb::class_<Rule>(m, "Rule", R"doc(
One rule of the validation layer's table (ndk.rules(), docs/validation.md).

id        the rule ID, e.g. "CREATE-COMPLETION-INLINE"
side      "provider" or "consumer": who must keep it
severity  "error" or "warning"
section   the digest section it comes from
summary   one sentence: what the rule requires
)doc")
        .def_property_readonly("id", [](const Rule &r) { return std::string(r.id); })
        .def_property_readonly("side", [](const Rule &r) { return validate::side_name(r.side); })
        .def_property_readonly("severity",
                               [](const Rule &r) { return validate::severity_name(r.severity); })
        .def_property_readonly("section", [](const Rule &r) { return std::string(r.section); })
        .def_property_readonly("summary", [](const Rule &r) { return std::string(r.summary); })
        .def("__eq__", [](const Rule &a, const Rule &b) { return rule_key(a) == rule_key(b); },
             pyb::is_operator())
        .def("__hash__", [](const Rule &r) { return pyb::hash(pyb::str(r.id)); })
        .def("__repr__", &rule_repr)
        // Pickled by ID: a Rule is an entry of the layer's table, which the unpickling side
        // has too.
        .def(pyb::pickle([](const Rule &r) { return pyb::make_tuple(std::string(r.id)); },
                         [](const pyb::tuple &state) {
                             const Rule *rule =
                                 state.size() == 1
                                     ? validate::find_rule(state[0].cast<std::string>())
                                     : nullptr;
                             if (!rule)
                                 throw pyb::value_error("not a rule of this validation layer");
                             return *rule;
                         }));

    m.def(
        "rules",
        [] {
            auto table = validate::rules();
            return std::vector<Rule>(table.begin(), table.end());
        },
        "Every rule of the validation layer, in the order of docs/validation.md.");

    pyb::class_<Session, std::shared_ptr<Session>>(m, "ValidationSession", R"doc(
What the validation layer recorded for one validated adapter (adapter.validation).  It outlives
the adapter: violations() still answers after the adapter was closed or collected.
)doc")
        .def("violations", &violations_of,
             "Every violation recorded so far, oldest first (also judges the calls still "
             "waiting for a completion against validate_timeout_ms).")
        .def("clear", &Session::clear, pyb::call_guard<ReleasedGil>(),
             "Forget the violations recorded so far.")
        .def("__repr__", [](Session &) { return std::string("<ndk.ValidationSession>"); });
}

void bind_raw(pyb::module_ &m)
{
    auto raw = m.def_submodule("raw", R"doc(
Raw NDK calls for scenarios that break a CONSUMER rule on purpose, to check that the validation
layer reports it (use as ndk.testing.raw).  They bypass what the consumer API does to stay
conforming (the closed-object check, the per-CQ serialization of digest 3.2, NULL checks), so
each refuses with ndk.ValidationRequired unless the object's adapter is validated.  The GIL is
released around the provider call.
)doc");

    raw.def(
        "arm_cq",
        [](const std::shared_ptr<Cq> &cq, ULONG notify_type) {
            require_validated(*cq, "arm_cq");
            NDK_CQ *ndk = cq->ndk();
            ReleasedGil released_gil;
            ndk->Dispatch->NdkArmCq(ndk, notify_type);
        },
        pyb::arg("cq").none(false), pyb::arg("notify_type"),
        "NdkArmCq(cq, notify_type) as is: no closed-object check, no per-CQ serialization.");

    raw.def(
        "get_cq_results",
        [](const std::shared_ptr<Cq> &cq, ULONG n) {
            require_validated(*cq, "get_cq_results");
            NDK_CQ *ndk = cq->ndk();
            std::vector<NDK_RESULT> results(n);
            {
                ReleasedGil released_gil;
                ULONG got = n ? ndk->Dispatch->NdkGetCqResults(ndk, results.data(), n) : 0;
                results.resize(std::min(got, n));
            }
            return results_of(*cq, std::span<const NDK_RESULT>(results));
        },
        pyb::arg("cq").none(false), pyb::arg("n") = 1,
        "NdkGetCqResults(cq, n) as is -> list of ndk.Result: no closed-object check, no per-CQ "
        "serialization.");

    raw.def(
        "get_cq_results_ex",
        [](const std::shared_ptr<Cq> &cq, ULONG n) {
            require_validated(*cq, "get_cq_results_ex");
            NDK_CQ *ndk = cq->ndk();
            std::vector<NDK_RESULT_EX> results(n);
            {
                ReleasedGil released_gil;
                ULONG got = n ? ndk->Dispatch->NdkGetCqResultsEx(ndk, results.data(), n) : 0;
                results.resize(std::min(got, n));
            }
            return results_of(*cq, std::span<const NDK_RESULT_EX>(results));
        },
        pyb::arg("cq").none(false), pyb::arg("n") = 1,
        "NdkGetCqResultsEx(cq, n) as is -> list of ndk.ResultEx: no closed-object check, no "
        "per-CQ serialization.");

    raw.def(
        "gate_cq_callbacks",
        [](const std::shared_ptr<Cq> &cq, bool closed) {
            if (closed)
                cq->events().gate.close();
            else
                cq->events().gate.open();
        },
        pyb::arg("cq").none(false), pyb::arg("closed"),
        "Close (True) or open (False) the gate the consumer's notification callback of this CQ "
        "waits at: while closed, every callback the provider makes stays inside the consumer, "
        "so another one on the same CQ provably overlaps it.  Always open it again: a callback "
        "held there holds the provider's thread.");

    raw.def(
        "cq_callbacks_waiting",
        [](const std::shared_ptr<Cq> &cq) { return cq->events().gate.waiting(); },
        pyb::arg("cq").none(false),
        "How many notification callbacks of this CQ wait at its closed gate now.");

    raw.def(
        "get_connection_data_null",
        [](const std::shared_ptr<Connector> &connector, ULONG private_data_length) {
            require_validated(*connector, "get_connection_data_null");
            NDK_CONNECTOR *ndk = connector->ndk();
            ULONG inbound = 0, outbound = 0, length = private_data_length;
            NTSTATUS status;
            {
                ReleasedGil released_gil;
                status = ndk->Dispatch->NdkGetConnectionData(ndk, &inbound, &outbound, nullptr,
                                                             &length);
            }
            return std::make_pair(Status{status}, length);
        },
        pyb::arg("connector").none(false), pyb::arg("private_data_length"),
        "NdkGetConnectionData with pPrivateData = NULL and *pPrivateDataLength = "
        "private_data_length -> (status, *pPrivateDataLength after the call).  No closed-object "
        "check.");
}

} // namespace ndk::py
