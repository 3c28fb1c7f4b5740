"""The presentation layer: numbers, units, headers and tables for people (`graphlab.present`)."""
from __future__ import annotations

import math

import pytest

from graphlab import present
from graphlab.present import Code, Column, Table, duration, error, number, readable, size


def test_numbers_keep_about_three_significant_digits_and_never_go_scientific_above_a_thousandth():
    assert [number(v) for v in (28.031738, 5.878925, 1221.1, 17005.7, 0.0091234, 9.9996)] == \
        ["28", "5.88", "1,221", "17,006", "0.00912", "10"]
    assert number(6.0) == "6" and number(7) == "7" and number(None) == present.DASH
    assert number(float("nan")) == present.DASH
    with pytest.raises(present.BadInputError, match="infinite"):
        number(math.inf)


def test_times_switch_unit_past_ten_thousand():
    assert duration(999) == "999 µs" and duration(9_999) == "10.0 ms"
    assert duration(10_562_180) == "10.6 s"  # a 10 s compile, not 10,562,180 µs
    assert duration(1_142_547) == "1.14 s"
    assert duration(28.031738) == "28.0 µs"


def test_errors_are_shown_by_their_size():
    assert error(1.3113021850585938e-06) == "1.3e-6" and error(0) == "0" and error(1.1523) == "1.2"


def test_sizes_are_binary_units():
    assert size(35651584) == "34.0 MiB" and size(2 * 2**30) == "2.00 GiB" and size(100) == "100 B"


def test_a_table_says_units_in_headers_and_picks_one_unit_per_column():
    table = readable([{"setting": "eager", "queue_p50_us": 2625.0, "first_pass_max_us": 188305.0},
                      {"setting": "compile", "queue_p50_us": 1142547.0, "first_pass_max_us": 10562180.0}],
                     index="setting")
    text = str(table)
    assert "queue p50 (ms)" in text and "first pass max (s)" in text
    assert "1,143" in text and "2.62" in text and "10.6" in text and "0.188" in text
    assert "_" not in text.splitlines()[0]


def test_missing_values_are_dashes_with_a_footnote_and_nothing_is_cut_silently():
    rows = [{"batch": b, "capacity_rps": None if b > 1 else 3674.0} for b in range(1, 8)]
    table = Table(rows, [Column("batch", kind="count"),
                         Column.infer("capacity_rps", missing="p99 over 50 ms at every client count")],
                  limit=3, more="`table.rows` has all of them")
    text = str(table)
    assert "NaN" not in text and "None" not in text
    assert f"{present.DASH} in capacity (req/s): p99 over 50 ms at every client count." in text
    assert "and 4 more rows (`table.rows` has all of them)" in text
    assert table._repr_html_().count("<tr>") == 4  # the header and three rows


def test_containers_and_code_are_shown_as_words():
    table = readable([{"kernel": Code("triton_poi_fused_add_0"), "grid": (64, 1, 1), "seen": {"a_b": 2},
                       "buckets": [1, 2, 4], "ok": False}])
    text = str(table)
    assert "`triton_poi_fused_add_0`" in text and "64 x 1 x 1" in text and "a b 2" in text
    assert "1, 2, 4" in text and "no" in text
    assert "<code>triton_poi_fused_add_0</code>" in table._repr_html_()


def test_an_unknown_column_is_a_clear_error():
    with pytest.raises(present.BadInputError, match="no column 'p99_us'.*p50_us"):
        Table([{"p50_us": 1.0}], ["p99_us"])


def test_a_dataframe_is_read_with_its_named_index():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"p50_us": [1.5, 2.25]}, index=pd.Index([1, 4], name="batch"))
    table = readable(frame, index="batch")
    assert str(table).splitlines()[0].split() == ["batch", "p50", "(µs)"]
    assert table.to_pandas().loc[4, "p50_us"] == 2.25


def test_facts_label_values_in_words():
    text = str(present.facts({"gpu_nodes": 47, "span": duration(179.26)}))
    assert "GPU nodes" in text and "179 µs" in text


def test_a_column_measured_in_ms_is_not_shown_with_digits_it_never_had():
    text = str(readable([{"p50_ms": 0.1}, {"p50_ms": 1.7}, {"p50_ms": 8.5}]))
    assert text.splitlines()[0].strip() == "p50 (ms)" and "1.7" in text and "1,700" not in text
    assert "12.5" in str(readable([{"p50_us": 12.5}, {"p50_us": 1500.0}]))  # measured in µs: stays in µs
