-- Wireshark / tshark dissector for mdcast (docs/tools.md, "Wireshark").
--
--   wireshark -X lua_script:tools/wireshark/mdcast.lua capture.pcap
--   tshark -X lua_script:tools/wireshark/mdcast.lua -r capture.pcap -Y "mdcast.frame.type == 21"
--
-- Two protocols:
--   mdcast     backbone datagrams (UDP, found by their 'MDCB' magic on any
--              port): the 32-byte packet header (proto/backbone_packet.h), the
--              packed messages — data, heartbeats, NAKs, RTT probes, image
--              requests, books (domain and map entries) — messages in parts put
--              back together, repairs (the retransmit flag), the HMAC trailer and
--              the zero padding of segmentation offload runs (the padded flag).
--   mdcast.tcp the TCP framing (proto/frame.h) of publisher and client
--              connections, on the ports set in the preferences (default 14001
--              and 14002, etc/*.yaml) or with "Decode As".
-- Message bodies are protobuf (proto/wire/*.proto), decoded here by a small
-- reader of the wire format; the fields of images and updates are shown by
-- their name in the field dictionary (etc/fields.dict), as mdcast.field.NAME.
-- The dictionary is read from $MDCAST_DICTIONARY, else ../../etc/fields.dict
-- next to this script, else /etc/mdcast/fields.dict or
-- /usr/share/mdcast/fields.dict. Unknown field ids show as mdcast.field.id.

local bb = Proto("mdcast", "mdcast backbone")
local tcp_proto = Proto("mdcast.tcp", "mdcast TCP framing")

---------------------------------------------------------------------------
-- Field dictionary

local function script_dir()
    local source = debug.getinfo(1, "S").source
    if source:sub(1, 1) == "@" then source = source:sub(2) end
    return source:match("^(.*)/[^/]*$") or "."
end

local function read_dictionary()
    local candidates = {
        script_dir() .. "/../../etc/fields.dict",
        "/etc/mdcast/fields.dict",
        "/usr/share/mdcast/fields.dict",
    }
    local from_env = os.getenv("MDCAST_DICTIONARY")
    if from_env and from_env ~= "" then table.insert(candidates, 1, from_env) end
    for _, path in ipairs(candidates) do
        local file = io.open(path, "r")
        if file then
            local dict = {}
            for line in file:lines() do
                local id, name, kind = line:match("^%s*(%d+)%s+([%w_]+)%s+(%u+)")
                if id then dict[tonumber(id)] = {name = name, kind = kind} end
            end
            file:close()
            return dict, path
        end
    end
    return {}, nil
end

local dictionary, dictionary_path = read_dictionary()

---------------------------------------------------------------------------
-- Enumerations and the packet / frame header fields

local packet_types = {[1] = "DATA", [2] = "HEARTBEAT", [3] = "CONTROL", [4] = "CONTROL_REPLY"}
local frame_types = {
    [1] = "LoginRequest", [2] = "LoginResponse", [3] = "Ping", [4] = "Pong", [5] = "Close",
    [10] = "ServiceAnnounce", [11] = "ServiceAnnounceResponse", [12] = "ItemRegister",
    [13] = "ItemRegistered", [14] = "Flush", [15] = "FlushAck", [20] = "Refresh",
    [21] = "Update", [22] = "ItemStatus", [23] = "Directory", [24] = "GroupStatus",
    [30] = "DirectoryRequest",
    [31] = "Subscribe", [32] = "Unsubscribe", [40] = "Heartbeat", [41] = "ImageRequest",
    [42] = "DirectoryQuery", [43] = "Nak", [44] = "RttProbe", [45] = "RttEcho",
    [46] = "Interest", [47] = "MessagePart", [48] = "Post", [49] = "PostAck",
}
local stream_states = {[0] = "UNSPECIFIED", [1] = "OPEN", [2] = "CLOSED"}
local data_states = {[0] = "UNSPECIFIED", [1] = "OK", [2] = "SUSPECT"}
local status_codes = {
    [0] = "NONE", [1] = "NOT_FOUND", [2] = "NOT_ENTITLED", [3] = "SOURCE_DOWN",
    [4] = "UNRECOVERABLE_LOSS", [5] = "SOURCE_RESET", [6] = "SERVER_SHUTDOWN",
    [7] = "LIMIT_REACHED", [8] = "INVALID_REQUEST", [9] = "RECOVERING", [10] = "AUTH_FAILED",
    [11] = "UNCHANGED",
}
local domains = {[0] = "MarketPrice", [1] = "MarketByPrice", [2] = "MarketByOrder",
                 [3] = "SymbolList"}
local map_actions = {[1] = "ADD", [2] = "UPDATE", [3] = "DELETE"}
local service_states = {[0] = "UNSPECIFIED", [1] = "UP", [2] = "DOWN"}
local service_modes = {[0] = "UNSPECIFIED", [1] = "BROADCAST", [2] = "INTERACTIVE"}
local close_reasons = {
    [0] = "UNSPECIFIED", [1] = "PROTOCOL_ERROR", [2] = "FRAME_TOO_LARGE", [3] = "AUTH_FAILED",
    [4] = "SLOW_CONSUMER", [5] = "IDLE_TIMEOUT", [6] = "SHUTDOWN", [7] = "LIMIT_REACHED",
    [8] = "NOT_LOGGED_IN", [9] = "KICKED",
}

local f = {
    magic = ProtoField.uint32("mdcast.magic", "Magic", base.HEX),
    version = ProtoField.uint8("mdcast.version", "Version"),
    type = ProtoField.uint8("mdcast.type", "Packet type", base.DEC, packet_types),
    flags = ProtoField.uint16("mdcast.flags", "Flags", base.HEX),
    retransmit = ProtoField.bool("mdcast.flags.retransmit", "Repair (retransmission)", 16, nil,
                                 0x0001),
    signed = ProtoField.bool("mdcast.flags.signed", "Signed", 16, nil, 0x0002),
    padded = ProtoField.bool("mdcast.flags.padded", "Padded", 16, nil, 0x0004),
    epoch = ProtoField.uint64("mdcast.epoch", "Epoch"),
    source = ProtoField.uint16("mdcast.source", "Distributor id"),
    start_ms = ProtoField.uint64("mdcast.epoch_start_ms", "Distributor start (ms)"),
    sequence = ProtoField.uint64("mdcast.sequence", "Sequence"),
    count = ProtoField.uint16("mdcast.message_count", "Message count"),
    reserved = ProtoField.uint16("mdcast.reserved", "Reserved"),
    payload_bytes = ProtoField.uint32("mdcast.payload_bytes", "Payload bytes"),
    signature = ProtoField.bytes("mdcast.signature", "Signature (HMAC)"),
    padding = ProtoField.bytes("mdcast.padding", "Padding (segmentation offload)"),
    frame = ProtoField.none("mdcast.frame", "Message"),
    frame_length = ProtoField.uint32("mdcast.frame.length", "Body length"),
    frame_type = ProtoField.uint16("mdcast.frame.type", "Message type", base.DEC, frame_types),
    frame_flags = ProtoField.uint16("mdcast.frame.flags", "Frame flags", base.HEX),
    field = ProtoField.none("mdcast.field", "Field"),
    field_id = ProtoField.uint32("mdcast.field.id", "Field id"),
    field_name = ProtoField.string("mdcast.field.name", "Field name"),
    field_value = ProtoField.string("mdcast.field.value", "Field value"),
    unknown = ProtoField.bytes("mdcast.unknown", "Unknown protobuf field"),
    map = ProtoField.none("mdcast.map", "Map (book entries)"),
    entry = ProtoField.none("mdcast.entry", "Map entry"),
    entry_key = ProtoField.string("mdcast.entry.key", "Key"),
    entry_action = ProtoField.uint32("mdcast.entry.action", "Action", base.DEC, map_actions),
}

-- Message fields (one ProtoField per name and kind, shared by the messages).
local function msg_field(name, kind, names)
    local abbrev = "mdcast." .. name
    local label = name:gsub("_", " ")
    if kind == "u64" then return ProtoField.uint64(abbrev, label) end
    if kind == "s64" then return ProtoField.int64(abbrev, label) end
    if kind == "u32" then return ProtoField.uint32(abbrev, label, base.DEC, names) end
    if kind == "bool" then return ProtoField.bool(abbrev, label) end
    if kind == "time" then return ProtoField.string(abbrev, label) end
    return ProtoField.string(abbrev, label)
end

local mf = {}
local function def(name, kind, names)
    if not mf[name] then mf[name] = msg_field(name, kind, names) end
    return {name = name, kind = kind, names = names}
end

-- Protobuf schemas: field number -> {name, kind} or {name, "msg", schema}.
local S = {}
S.Status = {[1] = def("stream_state", "u32", stream_states),
            [2] = def("data_state", "u32", data_states),
            [3] = def("status_code", "u32", status_codes), [4] = def("text", "string")}
S.FieldList = "fieldlist"
S.Refresh = {[1] = def("item_id", "u64"), [2] = def("item_seq", "u64"),
             [3] = def("clear_cache", "bool"), [4] = def("solicited", "bool"),
             [5] = def("service_id", "u32"), [6] = def("service_name", "string"),
             [7] = def("item_name", "string"), [8] = {name = "status", msg = "Status"},
             [9] = {name = "fields", msg = "FieldList"},
             [10] = def("domain", "u32", domains), [11] = {name = "map", msg = "Map"}}
S.Update = {[1] = def("item_id", "u64"), [2] = def("item_seq", "u64"),
            [3] = def("publish_time", "time"), [4] = {name = "fields", msg = "FieldList"},
            [5] = def("conflated", "bool"), [6] = def("trade", "bool"),
            [7] = def("stands_for", "u32"), [8] = def("first_publish_time", "time"),
            [9] = {name = "map", msg = "Map"}}
S.ItemStatus = {[1] = def("item_id", "u64"), [2] = def("service_id", "u32"),
                [3] = def("service_name", "string"), [4] = def("item_name", "string"),
                [5] = {name = "status", msg = "Status"}, [6] = def("item_seq", "u64")}
S.GroupStatus = {[1] = def("group_scope", "u32", {[1] = "SERVICE", [2] = "SOURCE"}),
                 [2] = def("group_id", "u32"), [3] = def("service_name", "string"),
                 [4] = {name = "status", msg = "Status"}, [5] = def("group_items", "u32")}
S.ServiceInfo = {[1] = def("service_id", "u32"), [2] = def("name", "string"),
                 [3] = def("service_state", "u32", service_states),
                 [4] = def("service_mode", "u32", service_modes),
                 [5] = def("item_count", "u64")}
S.Directory = {[1] = {name = "service", msg = "ServiceInfo"}}
S.Heartbeat = {[1] = def("next_sequence", "u64"), [2] = def("control_port", "u32"),
               [3] = def("send_time", "time"), [4] = def("trailing_edge", "u64")}
S.SequenceRange = {[1] = def("nak_from", "u64"), [2] = def("nak_to", "u64")}
S.Nak = {[1] = {name = "range", msg = "SequenceRange"}, [2] = def("asking_server_id", "u64")}
S.RttProbe = {[1] = def("probe_time", "time")}
S.ImageRequest = {[1] = def("service_id", "u32"), [2] = def("service_name", "string"),
                  [3] = def("item_name", "string"), [4] = def("item_id", "u64"),
                  [5] = def("asking_server_id", "u64")}
S.Interest = {[1] = def("epoch_id", "u64"), [2] = def("held_item_id", "u64"),
              [3] = def("released_item_id", "u64"), [4] = def("asking_server_id", "u64")}
S.Empty = {}
-- One part of a message larger than a datagram: where its bytes go in the whole
-- (put together below, "Messages in parts").
S.MessagePart = {[1] = def("part_total_bytes", "u32"), [2] = def("part_offset", "u32"),
                 [3] = def("part_data", "hidden")}
S.LoginRequest = {[1] = def("user", "string"), [2] = def("application_id", "string"),
                  [3] = def("position", "string"), [4] = def("password", "hidden"),
                  [5] = def("protocol_version", "u32"), [6] = def("group_status", "bool")}
S.LoginResponse = {[1] = def("accepted", "bool"), [2] = {name = "status", msg = "Status"},
                   [3] = def("server_id", "string"), [4] = def("heartbeat_interval_ms", "u32"),
                   [5] = def("max_frame_bytes", "u32"), [6] = def("max_items_per_request", "u32")}
S.Ping = {[1] = def("ping_time", "time")}
S.Close = {[1] = def("close_reason", "u32", close_reasons), [2] = def("text", "string")}
S.ServiceAnnounce = {[1] = def("name", "string"), [2] = def("service_mode", "u32", service_modes),
                     [3] = def("takeover_token", "hidden")}
S.ServiceAnnounceResponse = {[1] = def("name", "string"), [2] = def("service_id", "u32"),
                             [3] = {name = "status", msg = "Status"},
                             [4] = def("takeover_token", "hidden")}
S.RegisterEntry = {[1] = def("ref", "u64"), [2] = def("item_name", "string")}
S.ItemRegister = {[1] = def("service_id", "u32"), [2] = {name = "item", msg = "RegisterEntry"}}
S.RegisteredEntry = {[1] = def("ref", "u64"), [2] = def("item_id", "u64"),
                     [3] = def("last_item_seq", "u64")}
S.ItemRegistered = {[1] = def("service_id", "u32"), [2] = {name = "item", msg = "RegisteredEntry"},
                    [3] = {name = "status", msg = "Status"}}
S.Flush = {[1] = def("token", "u64")}
S.Subscribe = {[1] = def("request_id", "u32"), [2] = def("service_name", "string"),
               [3] = def("item_name", "string"), [4] = def("snapshot", "bool"),
               [5] = def("view_field_id", "u32"), [6] = def("conflate_ms", "u32"),
               [7] = def("known_item_id", "u64"), [8] = def("known_seq", "u64")}
S.Unsubscribe = {[1] = def("item_id", "u64")}
-- A contribution upstream: on-stream (item_id) or off-stream (service and item name).
S.Post = {[1] = def("post_id", "u64"), [2] = def("item_id", "u64"),
          [3] = def("service_name", "string"), [4] = def("item_name", "string"),
          [5] = {name = "fields", msg = "FieldList"}}
S.PostAck = {[1] = def("post_id", "u64"), [2] = def("accepted", "bool"),
             [3] = def("status_code", "u32", status_codes), [4] = def("text", "string")}

local body_schema = {
    [1] = "LoginRequest", [2] = "LoginResponse", [3] = "Ping", [4] = "Ping", [5] = "Close",
    [10] = "ServiceAnnounce", [11] = "ServiceAnnounceResponse", [12] = "ItemRegister",
    [13] = "ItemRegistered", [14] = "Flush", [15] = "Flush", [20] = "Refresh", [21] = "Update",
    [22] = "ItemStatus", [23] = "Directory", [24] = "GroupStatus", [30] = "Empty",
    [31] = "Subscribe",
    [32] = "Unsubscribe", [40] = "Heartbeat", [41] = "ImageRequest", [42] = "Empty",
    [43] = "Nak", [44] = "RttProbe", [45] = "RttProbe", [46] = "Interest",
    [47] = "MessagePart", [48] = "Post", [49] = "PostAck",
}

-- One ProtoField per dictionary field: mdcast.field.BID and so on.
local dict_fields = {}
for id, entry in pairs(dictionary) do
    dict_fields[id] = ProtoField.string("mdcast.field." .. entry.name, entry.name)
end

local all = {}
for _, field in pairs(f) do table.insert(all, field) end
for _, field in pairs(mf) do table.insert(all, field) end
for _, field in pairs(dict_fields) do table.insert(all, field) end
bb.fields = all

local e_malformed = ProtoExpert.new("mdcast.malformed", "Malformed mdcast data", expert.group.MALFORMED,
                                    expert.severity.ERROR)
local e_repair = ProtoExpert.new("mdcast.repair", "Repair (retransmitted packet)",
                                 expert.group.SEQUENCE, expert.severity.NOTE)
bb.experts = {e_malformed, e_repair}

---------------------------------------------------------------------------
-- Protobuf wire format

-- A varint at `offset`: its value (UInt64) and its length, or nil when cut short.
local function varint(tvb, offset, limit)
    local value = UInt64(0)
    local shift = 0
    local pos = offset
    while pos < limit and shift < 64 do
        local byte = tvb(pos, 1):uint()
        value = value:bor(UInt64(bit32.band(byte, 0x7F)):lshift(shift))
        pos = pos + 1
        if bit32.band(byte, 0x80) == 0 then return value, pos - offset end
        shift = shift + 7
    end
    return nil
end

local function zigzag(value)
    local half = Int64(value:rshift(1))
    if value:band(UInt64(1)) == UInt64(1) then return -half - 1 end
    return half
end

-- A decimal exponent outside this range is shown at the limit, as the C++ side
-- does (proto/field_values.cpp): a hostile 2^40 would otherwise make a string of
-- 2^40 zeros.
local MAX_DECIMAL_EXPONENT = 30

-- mantissa * 10^exponent as exact decimal text.
local function decimal_text(mantissa, exponent)
    exponent = math.max(-MAX_DECIMAL_EXPONENT, math.min(MAX_DECIMAL_EXPONENT, exponent))
    local text = tostring(mantissa)
    local sign = ""
    if text:sub(1, 1) == "-" then sign, text = "-", text:sub(2) end
    if exponent >= 0 then return sign .. text .. string.rep("0", exponent) end
    local places = -exponent
    if #text <= places then text = string.rep("0", places - #text + 1) .. text end
    return sign .. text:sub(1, #text - places) .. "." .. text:sub(#text - places + 1)
end

-- Years 1970..9999 as a date; any other time (negative, or hostile) as its
-- nanoseconds, as the C++ side prints what gmtime cannot take.
local MAX_TIME_SECONDS = 253402300799

local function time_text(ns)
    local seconds = (ns / 1000000000):tonumber()
    local fraction = (ns % 1000000000):tonumber()
    if ns < Int64(0) or seconds > MAX_TIME_SECONDS then return tostring(ns) end
    return os.date("!%Y-%m-%dT%H:%M:%S", math.floor(seconds)) .. string.format(".%09dZ", fraction)
end

-- Calls visit(number, wire_type, value_offset, value_length, varint_value) for
-- each field of the message in [offset, limit); false when malformed.
local function each_field(tvb, offset, limit, visit)
    local pos = offset
    while pos < limit do
        local key, n = varint(tvb, pos, limit)
        if not key then return false end
        pos = pos + n
        local number = key:rshift(3):tonumber()
        local wire = key:band(UInt64(7)):tonumber()
        if wire == 0 then
            local value, m = varint(tvb, pos, limit)
            if not value then return false end
            visit(number, wire, pos, m, value)
            pos = pos + m
        elseif wire == 1 or wire == 5 then
            local size = wire == 1 and 8 or 4
            if pos + size > limit then return false end
            visit(number, wire, pos, size, nil)
            pos = pos + size
        elseif wire == 2 then
            local length, m = varint(tvb, pos, limit)
            if not length then return false end
            pos = pos + m
            local size = length:tonumber()
            if pos + size > limit then return false end
            visit(number, wire, pos, size, nil)
            pos = pos + size
        else
            return false
        end
    end
    return true
end

-- A Decimal message (zigzag mantissa 1, zigzag exponent 2) as exact text.
local function decimal_at(tvb, offset, length)
    local mantissa, exponent = Int64(0), 0
    each_field(tvb, offset, offset + length, function(number, wire, _, _, v)
        if wire == 0 and number == 1 then mantissa = zigzag(v) end
        if wire == 0 and number == 2 then exponent = zigzag(v):tonumber() end
    end)
    return decimal_text(mantissa, exponent)
end

-- A FieldValue: the value by the dictionary name of its id.
local function dissect_field_value(tvb, offset, length, tree)
    local id, value_text = nil, ""
    local ok = each_field(tvb, offset, offset + length, function(number, wire, pos, size, v)
        if number == 1 and wire == 0 then
            id = v:tonumber()
        elseif number == 2 and wire == 0 then
            value_text = tostring(zigzag(v))
        elseif number == 3 and wire == 2 then
            value_text = decimal_at(tvb, pos, size)
        elseif number == 4 and wire == 1 then
            value_text = tostring(tvb(pos, 8):le_float())
        elseif number == 5 and wire == 2 then
            value_text = tvb(pos, size):string(ENC_UTF_8)
        elseif number == 6 and wire == 1 then
            value_text = time_text(tvb(pos, 8):le_int64())
        elseif number == 7 then
            value_text = "(blank)"
        end
    end)
    local range = tvb(offset, length)
    local entry = dictionary[id or -1]
    local name = entry and entry.name or ("field " .. tostring(id))
    local item = tree:add(f.field, range):set_text(name .. " = " .. value_text)
    item:add(f.field_id, range, id or 0)
    item:add(f.field_name, range, name)
    item:add(f.field_value, range, value_text)
    if dict_fields[id or -1] then item:add(dict_fields[id], range, value_text) end
    if not ok then item:add_proto_expert_info(e_malformed) end
    return name .. "=" .. value_text
end

local dissect_message

local function dissect_field_list(tvb, offset, length, tree)
    local subtree = tree:add(bb, tvb(offset, length), "Fields")
    local shown = {}
    local ok = each_field(tvb, offset, offset + length, function(number, wire, pos, size)
        if number == 1 and wire == 2 then
            table.insert(shown, dissect_field_value(tvb, pos, size, subtree))
        end
    end)
    subtree:append_text(" (" .. #shown .. "): " .. table.concat(shown, " "))
    return ok
end

-- One MapEntry (docs/books.md): its key (a price or a name), action and fields.
local function dissect_map_entry(tvb, offset, length, tree)
    local item = tree:add(f.entry, tvb(offset, length))
    local key, action = "?", "?"
    local ok = each_field(tvb, offset, offset + length, function(number, wire, pos, size, v)
        if (number == 1 or number == 2) and wire == 2 then
            key = number == 1 and decimal_at(tvb, pos, size) or tvb(pos, size):string()
            item:add(f.entry_key, tvb(pos, size), key)
        elseif number == 3 and wire == 0 then
            action = map_actions[v:tonumber()] or tostring(v)
            item:add(f.entry_action, tvb(pos, size), v:tonumber())
        elseif number == 4 and wire == 2 then
            dissect_field_list(tvb, pos, size, item)
        else
            item:add(f.unknown, tvb(pos, size))
        end
    end)
    item:set_text("Entry " .. action .. " " .. key)
    if not ok then item:add_proto_expert_info(e_malformed) end
end

-- A book's Map (Refresh.map, Update.map: bytes holding a wire.v1.Map).
local function dissect_map(tvb, offset, length, tree)
    local subtree = tree:add(f.map, tvb(offset, length))
    local entries = 0
    local ok = each_field(tvb, offset, offset + length, function(number, wire, pos, size)
        if number == 1 and wire == 2 then
            entries = entries + 1
            dissect_map_entry(tvb, pos, size, subtree)
        else
            subtree:add(f.unknown, tvb(pos, size))
        end
    end)
    subtree:set_text("Map (" .. entries .. " entries)")
    if not ok then subtree:add_proto_expert_info(e_malformed) end
end

-- Adds one scalar field of `spec` to the tree; returns its text.
local function add_scalar(tvb, spec, wire, pos, size, v, tree)
    local range = tvb(pos, size)
    local field = mf[spec.name]
    if spec.kind == "string" then
        local text = range:string(ENC_UTF_8)
        tree:add(field, range, text)
        return text
    elseif spec.kind == "hidden" then
        tree:add(field, range, "(" .. size .. " bytes, not shown)")
        return nil
    elseif spec.kind == "time" and wire == 1 then
        local text = time_text(range:le_int64())
        tree:add(field, range, text)
        return text
    elseif spec.kind == "u64" and wire == 1 then  -- fixed64 (a server's id)
        local value = range:le_uint64()
        tree:add(field, range, value)
        return tostring(value)
    elseif wire == 0 then
        if spec.kind == "u64" then
            tree:add(field, range, v)
        elseif spec.kind == "bool" then
            tree:add(field, range, v ~= UInt64(0))
        else
            tree:add(field, range, v:tonumber())
        end
        return tostring(v)
    end
    tree:add(f.unknown, range)
    return nil
end

-- A protobuf message of schema `name`: fields as named tree items.
dissect_message = function(tvb, offset, length, name, tree)
    local schema = S[name]
    local summary = {}
    local ok = each_field(tvb, offset, offset + length, function(number, wire, pos, size, v)
        local spec = schema[number]
        if not spec then
            tree:add(f.unknown, tvb(pos, size))
        elseif spec.msg == "FieldList" and wire == 2 then
            dissect_field_list(tvb, pos, size, tree)
        elseif spec.msg == "Map" and wire == 2 then
            dissect_map(tvb, pos, size, tree)
        elseif spec.msg and wire == 2 then
            local subtree = tree:add(bb, tvb(pos, size), spec.name)
            local inner = dissect_message(tvb, pos, size, spec.msg, subtree)
            subtree:append_text(" " .. inner)
        elseif wire == 2 and spec.kind ~= "string" and spec.kind ~= "hidden" then
            -- packed repeated scalars
            local p = pos
            while p < pos + size do
                local value, n = varint(tvb, p, pos + size)
                if not value then break end
                add_scalar(tvb, spec, 0, p, n, value, tree)
                p = p + n
            end
        else
            local text = add_scalar(tvb, spec, wire, pos, size, v, tree)
            if text and (spec.name == "item_name" or spec.name == "item_id" or
                         spec.name == "next_sequence" or spec.name == "status_code") then
                table.insert(summary, spec.name .. "=" .. text)
            end
        end
    end)
    if not ok then tree:add_proto_expert_info(e_malformed) end
    return table.concat(summary, " ")
end

-- One frame (8-byte header + body) at `offset`; returns its size and type name.
local function dissect_frame(tvb, offset, tree)
    local length = tvb(offset, 4):uint()
    local type = tvb(offset + 4, 2):uint()
    local type_name = frame_types[type] or ("type " .. type)
    local item = tree:add(f.frame, tvb(offset, 8 + length))
    item:set_text(type_name)
    item:add(f.frame_length, tvb(offset, 4))
    item:add(f.frame_type, tvb(offset + 4, 2))
    item:add(f.frame_flags, tvb(offset + 6, 2))
    local schema = body_schema[type]
    if schema and length > 0 then
        local text = dissect_message(tvb, offset + 8, length, schema, item)
        if text ~= "" then item:append_text(" " .. text) end
    end
    return 8 + length, type_name
end

---------------------------------------------------------------------------
-- Messages in parts (MessagePart, docs/backbone.md): put back together per
-- source epoch, on the first pass in capture order, from parts that follow one
-- another (a part out of place, any other message between two parts or a size
-- past MAX_ASSEMBLED_BYTES abandons the message, as the receiver does). The
-- whole message is kept for the packet that completed it, shown there as
-- "Reassembled" and decoded like any message.

local MAX_ASSEMBLED_BYTES = 16 * 1024 * 1024
local assembling = {}  -- epoch (text) -> {total, have, data (ByteArray)}
local assembled = {}   -- packet number -> list of whole messages (ByteArray)

function bb.init()
    assembling, assembled = {}, {}
end

-- A MessagePart frame's body at [offset, offset + length) of source `epoch`;
-- returns the whole message when this part completes it.
local function add_part(tvb, offset, length, epoch)
    local total, at, data_pos, data_size
    local ok = each_field(tvb, offset, offset + length, function(number, wire, pos, size, v)
        if number == 1 and wire == 0 then total = v:tonumber() end
        if number == 2 and wire == 0 then at = v:tonumber() end
        if number == 3 and wire == 2 then data_pos, data_size = pos, size end
    end)
    local state = assembling[epoch]
    at = at or 0
    if not ok or not total or not data_pos or total > MAX_ASSEMBLED_BYTES or
            (at ~= 0 and (not state or state.have ~= at or state.total ~= total)) then
        assembling[epoch] = nil
        return nil
    end
    if at == 0 then
        state = {total = total, have = 0, data = ByteArray.new()}
        assembling[epoch] = state
    end
    if data_size > 0 then state.data:append(tvb(data_pos, data_size):bytes()) end
    state.have = state.have + data_size
    if state.have > total then
        assembling[epoch] = nil
    elseif state.have == total then
        assembling[epoch] = nil
        return state.data
    end
    return nil
end

-- Message `index` of a data packet at `offset`: a part goes to its message, any
-- other message abandons the one in progress.
local function collect_part(tvb, offset, epoch, pinfo, index)
    local key = tostring(epoch)
    if tvb(offset + 4, 2):uint() ~= 47 then
        assembling[key] = nil
        return
    end
    local whole = add_part(tvb, offset + 8, tvb(offset, 4):uint(), key)
    if whole then
        assembled[pinfo.number] = assembled[pinfo.number] or {}
        table.insert(assembled[pinfo.number], {index = index, data = whole})
    end
end

local function show_assembled(data, root, names)
    local message = data:tvb("Reassembled mdcast message")
    if message:len() >= 8 and message(0, 4):uint() + 8 == message:len() then
        local _, name = dissect_frame(message, 0, root)
        names["reassembled " .. name] = (names["reassembled " .. name] or 0) + 1
    else
        root:add_proto_expert_info(e_malformed, "parts do not make one message")
    end
end

---------------------------------------------------------------------------
-- Backbone datagrams

local function dissect_backbone(tvb, pinfo, tree)
    local size = tvb:len()
    pinfo.cols.protocol = "MDCAST"
    local root = tree:add(bb, tvb(), "mdcast backbone")
    local header = root:add(bb, tvb(0, 32), "Header")
    local ptype = tvb(5, 1):uint()
    local flags = tvb(6, 2):uint()
    header:add(f.magic, tvb(0, 4))
    header:add(f.version, tvb(4, 1))
    header:add(f.type, tvb(5, 1))
    local flag_item = header:add(f.flags, tvb(6, 2))
    flag_item:add(f.retransmit, tvb(6, 2))
    flag_item:add(f.signed, tvb(6, 2))
    flag_item:add(f.padded, tvb(6, 2))
    local epoch = tvb(8, 8):uint64()
    local epoch_item = header:add(f.epoch, tvb(8, 8))
    epoch_item:add(f.source, tvb(8, 2))
    epoch_item:add(f.start_ms, tvb(8, 8), epoch:band(UInt64(0xFFFFFFFF, 0xFFFF)))
    header:add(f.sequence, tvb(16, 8))
    header:add(f.count, tvb(24, 2))
    header:add(f.reserved, tvb(26, 2))
    header:add(f.payload_bytes, tvb(28, 4))
    local signed = bit32.band(flags, 2) ~= 0
    local trailer = signed and 16 or 0
    local count = tvb(24, 2):uint()
    local payload = tvb(28, 4):uint()
    local info = (packet_types[ptype] or "?") .. " seq=" .. tostring(tvb(16, 8):uint64())
    if bit32.band(flags, 1) ~= 0 then
        info = info .. " [repair]"
        root:add_proto_expert_info(e_repair)
    end
    -- A padded packet ends before its datagram: zeros fill the rest.
    local padded = bit32.band(flags, 4) ~= 0
    local ends = 32 + payload + trailer
    if ends > size or (ends < size and not padded) then
        root:add_proto_expert_info(e_malformed, "payload length does not match the datagram")
        payload = math.max(0, size - 32 - trailer)
        ends = size
    end
    local offset = 32
    local names = {}
    local index = 0
    for _ = 1, count do
        if offset + 8 > 32 + payload then
            root:add_proto_expert_info(e_malformed, "message count beyond the payload")
            break
        end
        local length = tvb(offset, 4):uint()
        if offset + 8 + length > 32 + payload then
            root:add_proto_expert_info(e_malformed, "message beyond the payload")
            break
        end
        local used, name = dissect_frame(tvb, offset, root)
        names[name] = (names[name] or 0) + 1
        index = index + 1
        if not pinfo.visited and ptype == 1 then collect_part(tvb, offset, epoch, pinfo, index) end
        -- A message this part completed, in its place: what comes after it came later.
        for _, done in ipairs(assembled[pinfo.number] or {}) do
            if done.index == index then show_assembled(done.data, root, names) end
        end
        offset = offset + used
    end
    if signed and ends >= 32 + trailer then root:add(f.signature, tvb(ends - 16, 16)) end
    if ends < size then root:add(f.padding, tvb(ends, size - ends)) end
    local parts = {}
    for name, n in pairs(names) do table.insert(parts, n .. " " .. name) end
    table.sort(parts)
    pinfo.cols.info = "mdcast " .. info .. " " .. table.concat(parts, ", ") ..
                          (signed and " [signed]" or "")
    return size
end

function bb.dissector(tvb, pinfo, tree)
    if tvb:len() < 32 or tvb(0, 4):uint() ~= 0x4D444342 then return 0 end
    return dissect_backbone(tvb, pinfo, tree)
end

local function heuristic(tvb, pinfo, tree)
    if tvb:len() < 32 or tvb(0, 4):uint() ~= 0x4D444342 or tvb(4, 1):uint() ~= 1 then
        return false
    end
    dissect_backbone(tvb, pinfo, tree)
    return true
end
bb:register_heuristic("udp", heuristic)
DissectorTable.get("udp.port"):add_for_decode_as(bb)

---------------------------------------------------------------------------
-- TCP framing

tcp_proto.prefs.publisher_port = Pref.uint("Distributor publisher port", 14001,
                                           "publishers.port of the distributor")
tcp_proto.prefs.client_port = Pref.uint("Server client port", 14002,
                                        "clients.port of the server (instance 1)")

local function frame_length(tvb, pinfo, offset)
    return 8 + tvb(offset, 4):uint()
end

local function dissect_tcp_frame(tvb, pinfo, tree)
    pinfo.cols.protocol = "MDCAST"
    local root = tree:add(tcp_proto, tvb(), "mdcast frame")
    local _, name = dissect_frame(tvb, 0, root)
    local previous = tostring(pinfo.cols.info)
    if previous:sub(1, 7) == "mdcast " then
        pinfo.cols.info = previous .. ", " .. name
    else
        pinfo.cols.info = "mdcast " .. name
    end
    return tvb:len()
end

function tcp_proto.dissector(tvb, pinfo, tree)
    dissect_tcp_pdus(tvb, tree, 8, frame_length, dissect_tcp_frame)
    return tvb:len()
end

local registered_ports = {}
local function register_tcp_ports()
    local table = DissectorTable.get("tcp.port")
    for _, port in ipairs(registered_ports) do table:remove(port, tcp_proto) end
    registered_ports = {tcp_proto.prefs.publisher_port, tcp_proto.prefs.client_port}
    for _, port in ipairs(registered_ports) do table:add(port, tcp_proto) end
end
tcp_proto.prefs_changed = register_tcp_ports
register_tcp_ports()
DissectorTable.get("tcp.port"):add_for_decode_as(tcp_proto)

if not dictionary_path then
    print("mdcast.lua: no field dictionary found; fields show by id ($MDCAST_DICTIONARY)")
end
