"""Metrics, stats helpers, Pareto fronts and summarize()."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

from pytest_context_bench.errors import ConfigError
from pytest_context_bench.metrics import (
    CompressionRatio,
    CostOfPass,
    ErrorRate,
    Latency,
    MeanScore,
    ParetoRank,
    PassRate,
    PerDatasetBreakdown,
    default_metrics,
    quality,
    row_score,
    summarize,
)
from pytest_context_bench.metrics.stats import mean, percentile
from pytest_context_bench.outcome import EvalResult
from pytest_context_bench.results import EvalRow
from pytest_context_bench.types import Metric

_ids = itertools.count()
ERR = {"type": "RuntimeError", "message": "boom", "where": "system"}


def row(
    scores: dict[str, float] | None = None,
    *,
    system: str = "s",
    inp: int = 100,
    out: int = 50,
    latency: float = 1.0,
    dataset: str = "",
    error: dict[str, str] | None = None,
    metadata: dict[str, Any] | None = None,
) -> EvalRow:
    return EvalRow(
        system=system,
        example_id=str(next(_ids)),
        scores=dict(scores or {}),
        input_tokens=inp,
        output_tokens=out,
        metadata=dict(metadata or {}),
        latency=latency,
        dataset=dataset,
        error=error,
    )


def all_plain_floats(d: dict[str, float]) -> bool:
    return all(type(v) is float for v in d.values())


# --------------------------------------------------------------------------- exports


def test_exports() -> None:
    import pytest_context_bench.metrics as m
    from pytest_context_bench.metrics.token_stats import ParetoRank as SeedPath

    assert SeedPath is ParetoRank
    assert quality.f1_score("a b", "a b") == 1.0
    assert set(m.__all__) == {
        "AssertionBreakdown",
        "MeanScore",
        "MoneyCost",
        "LLMTokens",
        "PassRate",
        "CompressionRatio",
        "CostOfPass",
        "Latency",
        "PerDatasetBreakdown",
        "PerQATypeMetric",
        "ParetoRank",
        "ErrorRate",
        "summarize",
        "default_metrics",
        "row_score",
        "quality",
    }
    for name in m.__all__:
        assert hasattr(m, name)


def test_metric_names() -> None:
    assert MeanScore().name == "mean_score"
    assert PassRate().name == "pass_rate"
    assert CompressionRatio().name == "compression_ratio"
    assert CostOfPass().name == "cost_of_pass"
    assert Latency().name == "latency"
    assert PerDatasetBreakdown().name == "per_dataset"
    assert ParetoRank().name == "pareto_rank"
    assert ErrorRate().name == "error_rate"


# ------------------------------------------------------------------------- row_score


def test_row_score_error_is_zero_even_with_a_score() -> None:
    assert row_score(row({"f1": 1.0}, error=ERR)) == 0.0
    assert row_score(row({}, error=ERR), "anything") == 0.0


def test_row_score_present_and_missing() -> None:
    assert row_score(row({"f1": 0.25})) == 0.25
    assert row_score(row({"exact_match": 1.0})) is None
    assert row_score(row({"exact_match": 1.0}), "exact_match") == 1.0


def test_row_score_uses_row_primary_field() -> None:
    r = row({"f1": 0.1, "mc_accuracy": 1.0}, metadata={"score_field": "mc_accuracy"})
    assert row_score(r) == 1.0
    assert row_score(r, None) == 1.0
    # An explicit field overrides the row's.
    assert row_score(r, "f1") == 0.1
    # An empty primary field falls back to f1.
    assert row_score(row({"f1": 0.3}, metadata={"score_field": ""})) == 0.3


def test_row_score_coerces_to_float() -> None:
    v = row_score(row({"f1": 1}))
    assert type(v) is float


# ------------------------------------------------------------------------- MeanScore


def test_mean_score_excludes_missing_field() -> None:
    rows = [row({"f1": 1.0}), row({"f1": 0.5}), row({"exact_match": 0.0})]
    assert MeanScore().compute(rows) == {"mean_score": 0.75}


def test_mean_score_error_counts_as_zero() -> None:
    rows = [row({"f1": 1.0}), row({}, error=ERR)]
    assert MeanScore().compute(rows) == {"mean_score": 0.5}


def test_mean_score_nan_when_nothing_scored() -> None:
    assert math.isnan(MeanScore().compute([])["mean_score"])
    assert math.isnan(MeanScore().compute([row({"other": 1.0})])["mean_score"])


def test_mean_score_per_row_primary_field_vs_override() -> None:
    rows = [
        row({"mc_accuracy": 1.0, "f1": 0.0}, metadata={"score_field": "mc_accuracy"}),
        row({"f1": 0.5}),
    ]
    assert MeanScore().compute(rows) == {"mean_score": 0.75}
    assert MeanScore(score_field="f1").compute(rows) == {"mean_score": 0.25}
    assert MeanScore("mc_accuracy").compute(rows) == {"mean_score": 1.0}


@pytest.mark.parametrize("bad", ["", 3, ["f1"]])
def test_bad_score_field_rejected(bad: Any) -> None:
    with pytest.raises(ConfigError):
        MeanScore(score_field=bad)
    with pytest.raises(ConfigError):
        PassRate(score_field=bad)
    with pytest.raises(ConfigError):
        CostOfPass(score_field=bad)
    with pytest.raises(ConfigError):
        PerDatasetBreakdown(score_field=bad)


# -------------------------------------------------------------------------- PassRate


def test_pass_rate_threshold_is_inclusive() -> None:
    rows = [row({"f1": 0.7}), row({"f1": 0.69}), row({"f1": 1.0})]
    assert PassRate().compute(rows)["pass_rate"] == pytest.approx(2 / 3)
    assert PassRate(threshold=0.69).compute(rows) == {"pass_rate": 1.0}


def test_pass_rate_excludes_missing_and_fails_errors() -> None:
    rows = [row({"f1": 1.0}), row({"other": 1.0}), row({"f1": 1.0}, error=ERR)]
    assert PassRate().compute(rows) == {"pass_rate": 0.5}


def test_pass_rate_error_fails_even_at_zero_threshold() -> None:
    rows = [row({"f1": 0.0}), row({}, error=ERR)]
    assert PassRate(threshold=0.0).compute(rows) == {"pass_rate": 0.5}


def test_pass_rate_nan_when_nothing_scored() -> None:
    assert math.isnan(PassRate().compute([])["pass_rate"])
    assert math.isnan(PassRate().compute([row({"x": 1.0})])["pass_rate"])


@pytest.mark.parametrize("bad", [True, "0.7", math.nan, None])
def test_bad_threshold_rejected(bad: Any) -> None:
    with pytest.raises(ConfigError):
        PassRate(threshold=bad)
    with pytest.raises(ConfigError):
        CostOfPass(threshold=bad)


# ------------------------------------------------------------------ CompressionRatio


def test_compression_ratio_is_ratio_of_sums() -> None:
    rows = [row(inp=100, out=40), row(inp=300, out=60)]
    assert CompressionRatio().compute(rows) == {
        "compression_ratio": 0.75,
        "mean_input_tokens": 200.0,
        "mean_output_tokens": 50.0,
    }


def test_compression_ratio_negative_on_expansion() -> None:
    assert (
        CompressionRatio().compute([row(inp=100, out=150)])["compression_ratio"] == -0.5
    )


def test_compression_ratio_excludes_error_rows() -> None:
    rows = [row(inp=100, out=40), row(inp=300, out=60), row(inp=1000, out=0, error=ERR)]
    out = CompressionRatio().compute(rows)
    assert out["compression_ratio"] == 0.75
    assert out["mean_input_tokens"] == 200.0


def test_compression_ratio_zero_input_and_no_rows() -> None:
    out = CompressionRatio().compute([row(inp=0, out=0), row(inp=0, out=5)])
    assert math.isnan(out["compression_ratio"])
    assert out["mean_input_tokens"] == 0.0
    assert out["mean_output_tokens"] == 2.5
    empty = CompressionRatio().compute([row(error=ERR)])
    assert list(empty) == [
        "compression_ratio",
        "mean_input_tokens",
        "mean_output_tokens",
    ]
    assert all(math.isnan(v) for v in empty.values())


# ------------------------------------------------------------------------ CostOfPass


def test_cost_of_pass_counts_all_tokens_over_passing() -> None:
    rows = [
        row({"f1": 1.0}, out=10),
        row({"f1": 0.2}, out=20),
        row({"f1": 0.9}, out=30),
        row({"f1": 1.0}, out=40, error=ERR),  # tokens count, never passes
        row({"other": 1.0}, out=0),  # no field: never passes
    ]
    out = CostOfPass().compute(rows)
    assert out == {"cost_of_pass": 50.0, "num_passing": 2.0}
    assert all_plain_floats(out)


def test_cost_of_pass_inf_without_passes() -> None:
    assert CostOfPass().compute([row({"f1": 0.1}, out=7)]) == {
        "cost_of_pass": math.inf,
        "num_passing": 0.0,
    }
    out = CostOfPass().compute([])
    assert out == {"cost_of_pass": math.inf, "num_passing": 0.0}
    assert type(out["num_passing"]) is float


def test_cost_of_pass_threshold_and_field() -> None:
    rows = [row({"f1": 0.5, "exact_match": 1.0}, out=10), row({"f1": 0.5}, out=30)]
    assert CostOfPass(threshold=0.5).compute(rows)["cost_of_pass"] == 20.0
    assert CostOfPass(score_field="exact_match").compute(rows)["cost_of_pass"] == 40.0


# --------------------------------------------------------------------------- Latency


def test_latency_interpolates() -> None:
    rows = [row(latency=v) for v in (4.0, 1.0, 3.0, 2.0)]
    out = Latency().compute(rows)
    assert out["latency_mean"] == 2.5
    assert out["latency_median"] == 2.5
    # h = 3 * 0.95 = 2.85 -> 3 + 0.85 * (4 - 3)
    assert out["latency_p95"] == pytest.approx(3.85, abs=1e-12)
    # h = 3 * 0.99 = 2.97
    assert out["latency_p99"] == pytest.approx(3.97, abs=1e-12)
    assert list(out) == ["latency_mean", "latency_median", "latency_p95", "latency_p99"]


def test_latency_p95_is_not_the_max_for_20_values() -> None:
    out = Latency().compute([row(latency=float(v)) for v in range(1, 21)])
    assert out["latency_median"] == 10.5  # h = 9.5
    assert out["latency_p95"] == pytest.approx(19.05, abs=1e-12)  # h = 18.05
    assert out["latency_p99"] == pytest.approx(19.81, abs=1e-12)  # h = 18.81


def test_latency_single_value() -> None:
    out = Latency().compute([row(latency=2.0)])
    assert out == dict.fromkeys(out, 2.0)


def test_latency_excludes_error_rows_and_nan_when_empty() -> None:
    out = Latency().compute([row(latency=1.0), row(latency=100.0, error=ERR)])
    assert out["latency_p99"] == 1.0
    for rows in ([], [row(error=ERR)]):
        out = Latency().compute(rows)
        assert len(out) == 4
        assert all(math.isnan(v) for v in out.values())


# ----------------------------------------------------------------------- stats


def test_mean() -> None:
    assert math.isnan(mean([]))
    assert mean([0.1] * 10) == 0.1
    assert mean([1, 2]) == 1.5
    assert type(mean([1, 2])) is float
    assert math.isnan(mean([math.inf, -math.inf]))
    assert mean([math.inf, 1.0]) == math.inf


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([10.0, 20.0, 30.0], 0.5, 20.0),
        ([10.0, 20.0, 30.0], 0.0, 10.0),
        ([10.0, 20.0, 30.0], 1.0, 30.0),
        ([10.0, 20.0, 30.0], 0.25, 15.0),  # h = 0.5
        ([10.0, 20.0, 30.0], 0.9, 28.0),  # h = 1.8
        ([1.0, 5.0], 0.3, 2.2),  # h = 0.3
        ([1.0, 5.0], 0.75, 4.0),  # h = 0.75
        ([7.0], 0.99, 7.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 0.5, 3.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
        ([1.0, math.inf], 0.5, math.inf),
    ],
)
def test_percentile_hand_computed(
    values: list[float], p: float, expected: float
) -> None:
    assert percentile(values, p) == pytest.approx(expected, abs=1e-12)
    assert type(percentile(values, p)) is float


def test_percentile_empty_and_bad_p() -> None:
    assert math.isnan(percentile([], 0.5))
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ConfigError):
            percentile([1.0], bad)


def test_percentile_accepts_unsorted() -> None:
    assert percentile([30.0, 10.0, 20.0], 0.25) == 15.0


def test_percentile_matches_numpy_linear() -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(7)
    for n in (1, 2, 3, 7, 20, 101):
        values = sorted(rng.uniform(0, 10) for _ in range(n))
        for p in (0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 1.0):
            expected = float(np.quantile(values, p))
            assert percentile(values, p) == pytest.approx(
                expected, rel=1e-12, abs=1e-12
            )


# --------------------------------------------------------------- PerDatasetBreakdown


def test_per_dataset_sorted_with_unknown() -> None:
    rows = [
        row({"f1": 1.0}, dataset="qa"),
        row({"f1": 0.25}, dataset=""),
        row({"f1": 0.5}, dataset="qa"),
        row({"f1": 0.0}, dataset="math"),
        row({"other": 1.0}, dataset="math"),  # excluded, not 0
    ]
    out = PerDatasetBreakdown().compute(rows)
    assert out == {"dataset:math": 0.0, "dataset:qa": 0.75, "dataset:unknown": 0.25}
    assert list(out) == ["dataset:math", "dataset:qa", "dataset:unknown"]


def test_per_dataset_errors_and_unscored() -> None:
    rows = [
        row({"f1": 1.0}, dataset="qa"),
        row({"f1": 1.0}, dataset="qa", error=ERR),
        row({"other": 1.0}, dataset="ifeval"),
    ]
    out = PerDatasetBreakdown().compute(rows)
    assert out["dataset:qa"] == 0.5
    assert math.isnan(out["dataset:ifeval"])
    assert PerDatasetBreakdown().compute([]) == {}


def test_per_dataset_score_field() -> None:
    rows = [row({"f1": 1.0, "exact_match": 0.0}, dataset="qa")]
    assert PerDatasetBreakdown("exact_match").compute(rows) == {"dataset:qa": 0.0}


# ------------------------------------------------------------------------- ErrorRate


def test_error_rate() -> None:
    rows = [row(), row(error=ERR), row(), row()]
    out = ErrorRate().compute(rows)
    assert out == {"error_rate": 0.25, "num_errors": 1.0, "num_examples": 4.0}
    assert all_plain_floats(out)
    empty = ErrorRate().compute([])
    assert math.isnan(empty["error_rate"])
    assert empty["num_errors"] == 0.0 and empty["num_examples"] == 0.0
    assert all_plain_floats(empty)


# ------------------------------------------------------------------------ ParetoRank


def pts(**systems: tuple[float, float]) -> dict[str, dict[str, float]]:
    return {s: {"mean_score": q, "cost_of_pass": c} for s, (q, c) in systems.items()}


def test_pareto_compute_is_empty() -> None:
    assert ParetoRank().compute([row({"f1": 1.0})]) == {}


def test_pareto_chain() -> None:
    summary = pts(a=(0.9, 10.0), b=(0.8, 20.0), c=(0.7, 30.0))
    assert ParetoRank.rank_systems(summary) == {"a": 1, "b": 2, "c": 3}


def test_pareto_fronts_not_domination_count() -> None:
    # Upstream's domination count gives c = 3 (both a and b dominate it).
    summary = pts(a=(0.9, 100.0), b=(0.8, 50.0), c=(0.7, 200.0))
    ranks = ParetoRank.rank_systems(
        summary, quality_field="mean_score", cost_field="cost_of_pass"
    )
    assert ranks == {"a": 1, "b": 1, "c": 2}
    assert all(type(r) is int for r in ranks.values())


def test_pareto_ties_share_a_rank() -> None:
    summary = pts(a=(0.8, 10.0), b=(0.8, 10.0), c=(0.5, 20.0))
    assert ParetoRank.rank_systems(summary) == {"a": 1, "b": 1, "c": 2}


def test_pareto_inf_costs() -> None:
    summary = pts(a=(0.9, math.inf), b=(0.5, math.inf), c=(0.3, 100.0))
    # a dominates b (better quality, inf <= inf); nothing dominates c (cheaper).
    assert ParetoRank.rank_systems(summary) == {"a": 1, "b": 2, "c": 1}


def test_pareto_missing_and_nan() -> None:
    summary: dict[str, dict[str, float]] = {
        "x": {},
        "y": {"mean_score": 0.1, "cost_of_pass": 100.0},
        "z": {"mean_score": math.nan, "cost_of_pass": 100.0},
        "w": {"mean_score": 0.1, "cost_of_pass": math.nan},
    }
    # x = (-inf, inf), z = (-inf, 100), w = (0.1, inf): y dominates all three;
    # z and w each dominate x.
    assert ParetoRank.rank_systems(summary) == {"x": 3, "y": 1, "z": 2, "w": 2}
    # Two systems with nothing at all are identical points.
    assert ParetoRank.rank_systems({"p": {}, "q": {}}) == {"p": 1, "q": 1}
    assert ParetoRank.rank_systems({}) == {}


def test_pareto_custom_fields_and_compute_across() -> None:
    summary = {
        "a": {"pass_rate": 0.5, "mean_output_tokens": 10.0, "mean_score": 0.0},
        "b": {"pass_rate": 0.9, "mean_output_tokens": 5.0, "mean_score": 1.0},
    }
    assert ParetoRank.rank_systems(summary, "pass_rate", "mean_output_tokens") == {
        "a": 2,
        "b": 1,
    }
    across = ParetoRank("pass_rate", "mean_output_tokens").compute_across(summary)
    assert across == {"a": {"pareto_rank": 2.0}, "b": {"pareto_rank": 1.0}}
    assert type(across["a"]["pareto_rank"]) is float


# ------------------------------------------------------------------------- summarize


class Fixed:
    """A custom metric returning fixed values."""

    def __init__(self, name: str, values: dict[str, Any]) -> None:
        self.name = name
        self.values = values
        self.calls = 0

    def compute(self, rows: list[EvalRow]) -> dict[str, Any]:
        self.calls += 1
        return dict(self.values)


def test_summarize_first_seen_order() -> None:
    rows = [row({"f1": 1.0}, system="b"), row({"f1": 0.0}, system="a")]
    out = summarize(rows, [MeanScore()])
    assert list(out) == ["b", "a"]
    assert out == {"b": {"mean_score": 1.0}, "a": {"mean_score": 0.0}}


def test_summarize_systems_order_and_empty_system() -> None:
    rows = [
        row({"f1": 1.0}, system="b", out=10),
        row({"f1": 0.0}, system="a"),
        row({"f1": 0.5}, system="z"),
    ]
    out = summarize(rows, [MeanScore(), CostOfPass()], systems=["a", "c", "b"])
    # Listed systems first, then unlisted ones with rows (never dropped).
    assert list(out) == ["a", "c", "b", "z"]
    assert math.isnan(out["c"]["mean_score"])
    assert out["c"]["cost_of_pass"] == math.inf
    assert out["b"] == {"mean_score": 1.0, "cost_of_pass": 10.0, "num_passing": 1.0}


def test_summarize_key_order_follows_metrics() -> None:
    out = summarize([row({"f1": 1.0})], [ErrorRate(), MeanScore()])
    assert list(out["s"]) == ["error_rate", "num_errors", "num_examples", "mean_score"]


def test_summarize_collision_between_same_class() -> None:
    with pytest.raises(ConfigError) as exc:
        summarize([row({"f1": 1.0})], [MeanScore("f1"), MeanScore("exact_match")])
    msg = str(exc.value)
    assert "'mean_score'" in msg
    assert msg.count("MeanScore") == 2


def test_summarize_collision_between_classes() -> None:
    custom = Fixed("my_metric", {"pass_rate": 1.0})
    with pytest.raises(ConfigError, match="my_metric") as exc:
        summarize([row({"f1": 1.0})], [PassRate(), custom])
    assert "PassRate" in str(exc.value) and "'pass_rate'" in str(exc.value)


def test_summarize_collision_even_for_empty_systems() -> None:
    with pytest.raises(ConfigError):
        summarize([], [MeanScore(), MeanScore()], systems=["a"])


def test_summarize_same_instance_twice_is_not_a_collision() -> None:
    custom = Fixed("c", {"k": 1.0})
    out = summarize([row()], [custom, custom])
    assert out == {"s": {"k": 1.0}}
    assert custom.calls == 1


def test_summarize_coerces_to_plain_float() -> None:
    np = pytest.importorskip("numpy")
    custom = Fixed("c", {"i": 3, "b": True, "np": np.float64(0.5), "s": 2.5})
    out = summarize([row()], [custom])
    assert out == {"s": {"i": 3.0, "b": 1.0, "np": 0.5, "s": 2.5}}
    assert all_plain_floats(out["s"])


def test_summarize_rejects_non_numbers() -> None:
    with pytest.raises(ConfigError, match="'k'"):
        summarize([row()], [Fixed("c", {"k": "high"})])


def test_summarize_merges_compute_across() -> None:
    rows = [
        row({"f1": 0.9}, system="a", out=100),
        row({"f1": 0.8}, system="b", out=50),
        row({"f1": 0.75}, system="c", out=200),
    ]
    out = summarize(rows, [MeanScore(), CostOfPass(), ParetoRank()])
    assert {s: v["pareto_rank"] for s, v in out.items()} == {
        "a": 1.0,
        "b": 1.0,
        "c": 2.0,
    }
    assert all(all_plain_floats(v) for v in out.values())


def test_summarize_compute_across_collision() -> None:
    with pytest.raises(ConfigError, match="pareto_rank"):
        summarize(
            [row({"f1": 1.0})],
            [
                Fixed("mine", {"pareto_rank": 0.0}),
                MeanScore(),
                CostOfPass(),
                ParetoRank(),
            ],
        )


def test_summarize_compute_across_ignores_unknown_systems() -> None:
    class Across(Fixed):
        def compute_across(
            self, summary: dict[str, dict[str, float]]
        ) -> dict[str, dict[str, float]]:
            return {
                "ghost": {"x": 1.0},
                **{s: {"n": float(len(summary))} for s in summary},
            }

    out = summarize([row(system="a"), row(system="b")], [Across("a", {})])
    assert out == {"a": {"n": 2.0}, "b": {"n": 2.0}}


def test_result_filter_recomputes_with_summarize() -> None:
    rows = [
        row({"f1": 1.0}, system="a", dataset="qa"),
        row({"f1": 0.0}, system="a", dataset="math"),
        row({"f1": 0.5}, system="b", dataset="math"),
    ]
    metrics: list[Metric] = [MeanScore()]
    result = EvalResult(rows, summarize(rows, metrics), metrics=metrics)
    assert result.summary["a"] == {"mean_score": 0.5}
    assert result.filter(dataset="qa").summary == {"a": {"mean_score": 1.0}}


# ------------------------------------------------------------------- default_metrics


def test_default_metrics_base() -> None:
    ms = default_metrics()
    assert [type(m) for m in ms] == [
        MeanScore,
        PassRate,
        CompressionRatio,
        CostOfPass,
        Latency,
        ErrorRate,
    ]


def test_default_metrics_extras_and_params() -> None:
    ms = default_metrics("exact_match", 0.5, n_datasets=2, n_systems=3)
    assert [type(m) for m in ms][-2:] == [PerDatasetBreakdown, ParetoRank]
    for m in ms:
        if hasattr(m, "score_field"):
            assert m.score_field == "exact_match"
        if hasattr(m, "threshold"):
            assert m.threshold == 0.5
    assert [type(m) for m in default_metrics(n_datasets=2)][-1] is PerDatasetBreakdown
    assert [type(m) for m in default_metrics(n_systems=2)][-1] is ParetoRank


def test_default_metrics_summary_has_no_collisions_and_plain_floats() -> None:
    rows = [
        row({"f1": 0.9}, system="a", dataset="qa"),
        row({"f1": 0.1}, system="a", dataset="math", error=ERR),
        row({"f1": 0.3}, system="b", dataset="qa"),
    ]
    out = summarize(rows, default_metrics(n_datasets=2, n_systems=2), ["a", "b", "c"])
    assert list(out) == ["a", "b", "c"]
    for values in out.values():
        assert all_plain_floats(values)
        assert "pareto_rank" in values and "error_rate" in values


ALL_METRICS = [
    MeanScore(),
    PassRate(),
    CompressionRatio(),
    CostOfPass(),
    Latency(),
    PerDatasetBreakdown(),
    ParetoRank(),
    ErrorRate(),
]
SAMPLES = [
    [],
    [row({"f1": 1.0}, inp=10, out=3, dataset="qa")],
    [row({"f1": 1.0}), row(error=ERR), row({"x": 1.0}, dataset="d")],
    [row({}, error=ERR)],
]


@pytest.mark.parametrize("metric", ALL_METRICS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("rows", SAMPLES, ids=["empty", "one", "mixed", "errors"])
def test_every_value_is_exactly_float(metric: Any, rows: list[EvalRow]) -> None:
    out = metric.compute(rows)
    assert isinstance(out, dict)
    assert all_plain_floats(out)


def test_llm_tokens_are_the_replies_usage_not_the_text_counts() -> None:
    """Issue 39: LLMTokens counts what the LLM reported for the System's calls (cache
    hits included, judges not); no measured call gives no key, so a gate sees nan."""
    import math

    from pytest_context_bench.gate import check_gates, gates_from_limits
    from pytest_context_bench.metrics import LLMTokens
    from pytest_context_bench.results import EvalRow

    def row(i: int, score: float, usage: dict | None, judge: dict | None = None) -> EvalRow:
        meta: dict = {"score_field": "f1"}
        if usage is not None:
            meta["llm_usage"] = usage
        if judge is not None:
            meta["judge_usage"] = judge
        return EvalRow(system="s", example_id=str(i), dataset="d", scores={"f1": score},
                       input_tokens=5, output_tokens=1, latency=0.0, metadata=meta)

    rows = [
        row(1, 1.0, {"prompt_tokens": 100, "completion_tokens": 3, "cache_hits": 1}),
        row(2, 0.0, {"prompt_tokens": 120, "completion_tokens": 5}, judge={"prompt_tokens": 999}),
        row(3, 1.0, None),  # no call: 0 spent
        row(4, 1.0, {"prompt_tokens": True, "completion_tokens": float("nan")}),  # junk: 0
    ]
    got = LLMTokens().compute(rows)
    assert got == {"llm_prompt_tokens": 55.0, "llm_completion_tokens": 2.0,
                   "llm_tokens_per_pass": pytest.approx(228 / 3)}
    assert LLMTokens().compute([row(1, 0.0, {"prompt_tokens": 1, "completion_tokens": 1})])[
        "llm_tokens_per_pass"] == math.inf
    assert LLMTokens().compute([row(1, 1.0, None)]) == {}
    gates = gates_from_limits({"max_llm_tokens_per_pass": 50})
    (unmeasured,) = check_gates("s", {}, gates)
    assert not unmeasured.passed and "no LLM call was measured" in unmeasured.reason
    (breached,) = check_gates("s", got, gates)
    assert not breached.passed and "llm_tokens_per_pass = 76 breaches the limit <= 50" in breached.reason
