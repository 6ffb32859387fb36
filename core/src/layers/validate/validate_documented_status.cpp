// STATUS-UNDOCUMENTED: a status outside what the function's reference page documents
// (kit::kFunctions).  Every page also allows "other" codes, so it is a warning, not an error.
#include "layers/validate/validate_layer.hpp"
#include "providers/kit/kit_functions.hpp"

#include <cstdio>

namespace ndk::validate {

void check_documented(const Shadow *object, LayerAdapter &adapter, const char *function,
                      NTSTATUS status)
{
    const kit::NdkFunction *row = kit::find_function(function);
    if (status == STATUS_SUCCESS || (row != nullptr && row->documents(status)))
        return;
    char text[96];
    std::snprintf(text, sizeof text, "returned 0x%08X, not among the statuses its page documents",
                  static_cast<unsigned>(status));
    adapter.report("STATUS-UNDOCUMENTED", object ? object->name() : "adapter", function, text);
}

} // namespace ndk::validate
