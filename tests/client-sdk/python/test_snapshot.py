"""mdcast.snapshot_values() and mdcast.snapshot_frame() against real daemons: one image of
each item as a dict {item: {field: value}} in the order asked (the view's fields only, the
values mdcast-source published for that item), None for an item or service that does not
exist; the same as a pandas DataFrame indexed by item, a row of NaN where there is no image.
The DataFrame case skips, saying so, when pandas is not installed (python3-pandas)."""
import math

import pytest

import mdcast
from conftest import ITEMS, start_source_stack


def bid_of(item, value):
    """mdcast-source's BID of ITEMnnnnnn is 100 + n + (seq % 1000) / 100 (docs/tools.md)."""
    n = int(item[4:])
    return 100 + n <= value < 110 + n


def test_snapshot_values_is_a_dict_per_item(stack):
    servers = start_source_stack(stack)
    asked = [ITEMS[2], "NO.SUCH.ITEM", ITEMS[0]]
    values = mdcast.snapshot_values(servers, "MDCAST", asked, view=["BID", "ASK"], timeout=10)
    assert list(values) == asked
    assert values["NO.SUCH.ITEM"] is None
    for item in (ITEMS[2], ITEMS[0]):
        assert set(values[item]) == {"BID", "ASK"}, values[item]
        assert bid_of(item, values[item]["BID"]), (item, values[item])
    everything = mdcast.snapshot_values(servers, "MDCAST", ITEMS[1], timeout=10)
    assert {"BID", "ASK", "DSPLY_NAME"} <= set(everything[ITEMS[1]])
    assert mdcast.snapshot_values(servers, "NO.SUCH.SERVICE", [ITEMS[0]], timeout=10) == {ITEMS[0]: None}


def test_snapshot_frame_is_a_dataframe(stack):
    pandas = pytest.importorskip("pandas", reason="pandas is not installed (apt install python3-pandas): "
                                                  "snapshot_frame not tested")
    servers = start_source_stack(stack)
    frame = mdcast.snapshot_frame(servers, "MDCAST", [ITEMS[0], "NO.SUCH.ITEM", ITEMS[3]],
                                  view=["BID", "ASK"], timeout=10)
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.index) == [ITEMS[0], "NO.SUCH.ITEM", ITEMS[3]] and frame.index.name == "item"
    assert list(frame.columns) == ["BID", "ASK"]
    assert bid_of(ITEMS[0], frame.loc[ITEMS[0], "BID"]) and bid_of(ITEMS[3], frame.loc[ITEMS[3], "BID"])
    assert math.isnan(frame.loc["NO.SUCH.ITEM", "BID"])
