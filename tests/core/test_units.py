"""Units from a table's rows: one per seed in seed order, groups in the order the table first has them."""

from vitheory.core.units import grouped_units, seed_units, split

ROWS = [{"model": "vit", "seed": 2, "x": 1.0}, {"model": "cnn", "seed": 0, "x": 2.0},
        {"model": "vit", "seed": 0, "x": 3.0}, {"model": "vit", "seed": 2, "x": 4.0}]


def test_seeds_come_in_seed_order_with_their_rows_in_table_order():
    assert seed_units(ROWS) == [[ROWS[1], ROWS[2]], [ROWS[0], ROWS[3]]]
    assert seed_units(ROWS, lambda rows: sum(row["x"] for row in rows)) == [5.0, 5.0]


def test_groups_keep_the_table_order_and_split_into_seeds():
    grouped = grouped_units(ROWS, "model", lambda rows: [row["x"] for row in rows])
    assert list(grouped) == ["vit", "cnn"]  # a claim's groups in a fixed order: its intervals sum over them
    assert grouped == {"vit": [[3.0], [1.0, 4.0]], "cnn": [[2.0]]}
    assert list(split(ROWS, "seed")) == [2, 0]
