#include "sample_field_list.h"

namespace mdcast::tools {

void add_sample_value(FieldList& fields, const SampleValue& value) {
    if (value.decimal) {
        fields.add_decimal(value.id, value.value, value.exponent);
    } else {
        fields.add_int(value.id, value.value);
    }
}

SampleUpdateBuilder::SampleUpdateBuilder(size_t body_bytes)
    : encoder_(body_bytes), filler_(body_bytes, 'x') {}

void SampleUpdateBuilder::build(FieldList& fields, uint64_t item_id, uint64_t index, uint64_t seq,
                                uint64_t publish_time_ns) {
    const auto values = update_values(index, seq);
    const auto layout = encoder_.layout(item_id, values, seq, publish_time_ns);
    fields.clear();
    for (size_t i = 0; i < layout.sample_fields; ++i) add_sample_value(fields, values[i]);
    if (layout.filler >= 0) {
        fields.add_string(kFillerFieldId,
                          std::string_view(filler_).substr(0, static_cast<size_t>(layout.filler)));
    }
}

void append_wire_fields(FieldList& out, const wire::v1::FieldList& fields) {
    using Value = wire::v1::FieldValue;
    for (const Value& field : fields.fields()) {
        switch (field.value_case()) {
            case Value::kIntValue:
                out.add_int(field.id(), field.int_value());
                break;
            case Value::kDecimalValue:
                out.add_decimal(field.id(), field.decimal_value().mantissa(),
                                field.decimal_value().exponent());
                break;
            case Value::kDoubleValue:
                out.add_double(field.id(), field.double_value());
                break;
            case Value::kStringValue:
                out.add_string(field.id(), field.string_value());
                break;
            case Value::kTimeNs:
                out.add_time(field.id(), field.time_ns());
                break;
            case Value::kBlank:
            case Value::VALUE_NOT_SET:
                out.add_blank(field.id());
                break;
        }
    }
}

}  // namespace mdcast::tools
