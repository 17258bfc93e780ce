"""Option and ini names (defined once, reused in help, errors and tests) and Settings.

Precedence: command line > ini (``[tool.pytest.ini_options]``) > default. A list
given on the command line (``--ctxbench-dataset`` repeated) replaces the ini list.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import pytest

__all__ = ["OPTIONS", "OUTPUT_OPTIONS", "Settings", "addoptions", "ini_bool", "Option"]

#: The marker's name (``@pytest.mark.ctxbench``); here, not in collection.py, so that
#: the hooks of a run that uses no ctxbench can check for it without loading the rest.
MARKER = "ctxbench"


@dataclass(frozen=True)
class Option:
    flag: str
    dest: str
    ini: str
    help: str
    kind: str  # "list" | "str" | "int" | "float" | "bool"
    metavar: str | None = None

    def where(self, from_cli: bool) -> str:
        return self.flag if from_cli else f"ini option {self.ini!r}"


def _opt(name: str, kind: str, help: str, metavar: str | None = None) -> Option:
    snake = name.replace("-", "_")
    return Option(f"--ctxbench-{name}", f"ctxbench_{snake}", f"ctxbench_{snake}", help, kind, metavar)


# Help text rules (as pytest-xdist): start with a capital; a single phrase takes no
# full stop; several phrases each end with one.
DATASET = _opt(
    "dataset",
    "list",
    "Dataset to run, repeatable: a .jsonl/.json/.csv/.parquet path or a registered name"
    " (name or name:config). Each example becomes one test",
    "SPEC",
)
SYSTEM = _opt(
    "system",
    "list",
    "System to test, repeatable: an import path 'package.module:obj' (an instance,"
    " a class or a zero-argument factory). Default: the ctxbench_system fixture",
    "IMPORT_PATH",
)
EVALUATOR = replace(
    _opt(
        "evaluator",
        "list",
        "Evaluator added to every command-line suite, repeatable: an import path"
        " 'package.module:obj' (an instance with name and score(original, processed),"
        " a class or a zero-argument factory)",
        "IMPORT_PATH",
    ),
    ini="ctxbench_evaluators",  # a list of them, one per line
)
LIMIT = _opt("limit", "int", "Run only the first N examples of each dataset", "N")
SCORE_FIELD = _opt(
    "score-field",
    "str",
    "Score that decides pass/fail, mean score and cost of pass. Default: each"
    " dataset's primary score (f1 for QA)",
    "NAME",
)
THRESHOLD = _opt(
    "threshold", "float", "An example passes when its score is >= this. Default: 0.7", "X"
)
MIN_PASS_RATE = _opt(
    "min-pass-rate", "float", "Gate: fail the run when a suite's pass rate is below X", "X"
)
MIN_MEAN_SCORE = _opt(
    "min-mean-score", "float", "Gate: fail the run when a suite's mean score is below X", "X"
)
MAX_COST_OF_PASS = _opt(
    "max-cost-of-pass",
    "float",
    "Gate: fail the run when a suite's cost of pass (output tokens per passing"
    " example) is above X",
    "X",
)
MAX_ERROR_RATE = _opt(
    "max-error-rate",
    "float",
    "Gate: fail the run when the share of examples whose System or evaluator raised"
    " is above X",
    "X",
)
NO_GATE = _opt("no-gate", "bool", "Report the gates without failing the run")
GATE_PARTIAL = _opt(
    "gate-partial",
    "bool",
    "Apply the gates even when pytest's own selection (-k, -m, --lf, --deselect,"
    " node ids, -x/--maxfail) ran only part of the examples. Default: such a run"
    " reports but does not gate",
)
STRICT = _opt(
    "strict",
    "bool",
    "Count an example scoring below the threshold as a test failure. Default: its own"
    " 'below threshold' status, which does not fail the run",
)
JSON = _opt("json", "str", "Write the JSON report (summary, gates, rows) to PATH", "PATH")
MARKDOWN = _opt(
    "markdown",
    "str",
    "Write a Markdown summary (gates, summary table, worst and flipped examples),"
    " sized for a pull-request comment, to PATH",
    "PATH",
)
HTML = _opt(
    "html",
    "str",
    "Write a self-contained HTML report (works offline: no request of any kind) to PATH",
    "PATH",
)
NO_STEP_SUMMARY = _opt(
    "no-step-summary",
    "bool",
    "Do not append the Markdown summary to $GITHUB_STEP_SUMMARY (GitHub Actions sets"
    " it; by default the summary is appended when it is set)",
)
TOKENIZER = _opt(
    "tokenizer",
    "str",
    "Token counter: cl100k_base (default, offline), o200k_base, a .tiktoken file, or"
    " 'package.module:callable' (str -> int)",
    "SPEC",
)
TEXT_FIELDS = _opt(
    "text-fields",
    "str",
    "Comma-separated example fields counted as prompt tokens. Default:"
    " context,question,turns",
    "FIELDS",
)

SAVE_BASELINE = _opt(
    "save-baseline",
    "str",
    "Write this run's rows and summary as a baseline to PATH (diff-friendly JSON, meant"
    " to be committed and reviewed)",
    "PATH",
)
BASELINE = _opt(
    "baseline",
    "str",
    "Compare this run with the baseline at PATH, example by example",
    "PATH",
)
BASELINE_RESPONSES = _opt(
    "baseline-responses",
    "str",
    "Whether a saved baseline keeps each example's answer (response, tool calls,"
    " trajectory; capped at 2,000 characters each) so that it can be scored again"
    " without the System: on or off (for answers that must not be committed)."
    " Default: on",
    "on|off",
)
MAX_DROP = _opt(
    "max-drop",
    "list",
    "Gate against the baseline, repeatable: METRIC:AMOUNT (pass_rate:0.02,"
    " mean_score:0.01, cost_of_pass:10%, latency_mean:20%). Fails only when the change"
    " is both larger than AMOUNT and statistically significant",
    "SPEC",
)
CONFIDENCE = _opt(
    "confidence",
    "float",
    "Confidence of the baseline comparison's tests and intervals. Default: 0.95",
    "X",
)
PROXY = _opt(
    "proxy",
    "list",
    "OpenAI-compatible endpoint to test as a System, repeatable (with or without"
    " /v1). The API key comes from OPENAI_API_KEY",
    "URL",
)
PROXY_NAME = _opt(
    "proxy-name", "list", "Name of each --ctxbench-proxy, in the same order", "NAME"
)
MODEL = _opt(
    "model",
    "str",
    "Model sent to every --ctxbench-proxy. Default: the endpoint's only model (GET"
    " /v1/models); an endpoint listing several needs this option",
    "MODEL",
)
JUDGE_URL = _opt(
    "judge-url",
    "str",
    "OpenAI-compatible endpoint of an LLM judge: adds LLMJudge (MemoryJudge for"
    " memory datasets) to every dataset",
    "URL",
)
JUDGE_MODEL = _opt(
    "judge-model",
    "str",
    "Model of the judge. Default: the judge endpoint's only model (GET /v1/models)",
    "MODEL",
)
PROXY_TIMEOUT = _opt(
    "proxy-timeout",
    "float",
    "Seconds each HTTP attempt of a --ctxbench-proxy may take (connect, read, write)."
    " Default: 30",
    "SECONDS",
)
PROXY_RETRIES = _opt(
    "proxy-retries",
    "int",
    "Retries of a --ctxbench-proxy request after the first attempt (timeouts, dropped"
    " connections, 429 and 5xx); 0 for none. Default: 3",
    "N",
)
JUDGE_TIMEOUT = _opt(
    "judge-timeout",
    "float",
    "Seconds each HTTP attempt of the --ctxbench-judge-url judge may take. Default: 60",
    "SECONDS",
)
JUDGE_RETRIES = _opt(
    "judge-retries",
    "int",
    "Retries of a judge request after the first attempt; 0 for none. Default: 3",
    "N",
)
JUDGE_REPEAT = _opt(
    "judge-repeat",
    "int",
    "Ask the judge N times per example, each answer its own cache entry: the mean"
    " score, the majority verdict (a tie fails) and the spread in the details."
    " Default: 1",
    "N",
)
JUDGE_NO_LOGPROBS = _opt(
    "judge-no-logprobs",
    "bool",
    "Do not ask the judge's endpoint for token probabilities (for an endpoint that"
    " refuses logprobs): a rubric's score is then the plain score, not the"
    " probability-weighted one",
)
JUDGE_LABELS = _opt(
    "judge-labels",
    "str",
    "People's labels of examples, a JSONL file of {example_id, label} (pass/fail or"
    " a score on the judge's scale): the judge's agreement with them is measured and"
    " reported",
    "PATH",
)
MIN_JUDGE_KAPPA = _opt(
    "min-judge-kappa",
    "float",
    "With --ctxbench-judge-labels: when the judge agrees with the labels less than"
    " this (Cohen's kappa; quadratic-weighted for scores), the gates of suites the"
    " judge scores are reported but not enforced",
    "K",
)
TASK = _opt(
    "task",
    "str",
    "Family of the examples of local dataset files that do not say it with a 'task'"
    " field: qa, summarization, multiple_choice, math, code, nli, ifeval,"
    " conversation or memory. Default: qa",
    "FAMILY",
)
DATA_DIR = _opt(
    "data-dir",
    "str",
    "Directory holding named datasets' files in their published format (e.g."
    " HumanEval.jsonl.gz); also read from the CTXBENCH_DATA_DIR environment variable",
    "DIR",
)
SAMPLE = _opt(
    "sample",
    "int",
    "Run a seeded random sample of N examples of each dataset (after"
    " --ctxbench-limit), the same on every machine",
    "N",
)
SEED = _opt(
    "seed", "int",
    "Seed of --ctxbench-sample and of the baseline comparison's draws. Default: 0", "S",
)
SHARD = _opt(
    "shard",
    "str",
    "Run shard I of N (1 <= I <= N) of each dataset, split by example id: N CI jobs"
    " given 1/N ... N/N run every example exactly once",
    "I/N",
)
REPEAT = _opt(
    "repeat",
    "int",
    "Run each example K times (K items): reports pass@k, pass^k and flaky examples;"
    " metrics and gates use the mean over trials. Default: 1",
    "K",
)
TRIALS = _opt(
    "trials",
    "str",
    "adaptive: ask each example once, then ask a seeded share of the examples again"
    " (up to --ctxbench-max-trials), within --ctxbench-trial-budget, and nothing more"
    " when the baseline shows a deterministic System; each example is compared on as"
    " many trials as it got. Needs --ctxbench-baseline saved with --ctxbench-repeat",
    "MODE",
)
FAMILYWISE = _opt(
    "familywise",
    "str",
    "none (each max-drop gate at 1 - confidence) or holm (all max-drop gates of the"
    " run adjusted together by Holm's step-down: at most 1 - confidence false alarms"
    " per run in all). Default: none",
    "MODE",
)
MAX_TRIALS = _opt(
    "max-trials",
    "int",
    "Adaptive trials: trials of an example asked again, in all. Default: 4",
    "K",
)
TRIAL_BUDGET = _opt(
    "trial-budget",
    "float",
    "Adaptive trials: calls per example on average (in passes over the examples) for"
    " an unchanged System. Default: 1.5",
    "X",
)
HUB = _opt(
    "hub",
    "bool",
    "Allow downloading named datasets from the Hugging Face hub (needs the datasets"
    " extra); the copy is cached for offline runs. Also CTXBENCH_HUB=1",
)
SKIP_BAD_RECORDS = _opt(
    "skip-bad-records",
    "bool",
    "Skip (and count) the records of a named dataset that cannot be mapped, instead of"
    " stopping with an error",
)
MAX_LINE_BYTES = _opt(
    "max-line-bytes",
    "int",
    "The longest line of a .jsonl dataset read, in bytes; a longer line is an error"
    " naming the file and the line, found after reading at most N bytes of it."
    " Default: 67108864 (64 MiB). Also CTXBENCH_MAX_LINE_BYTES",
    "N",
)
LIST_DATASETS = _opt(
    "list-datasets",
    "bool",
    "List the named datasets (name, family, source, configs) and exit",
)
REQUIRE_SAME_EXAMPLES = _opt(
    "require-same-examples",
    "bool",
    "Fail the baseline gate when examples are new since the baseline or missing from"
    " it (by default they are listed only)",
)
CODE_TIMEOUT = _opt(
    "code-timeout", "float", "CodeExecution: wall-clock seconds per program. Default: 10", "SECONDS"
)
CODE_MEMORY = _opt(
    "code-memory",
    "int",
    "CodeExecution: address-space limit per program in MiB, 0 for none. Default: 1024",
    "MIB",
)
ALLOW_EMPTY = _opt(
    "allow-empty",
    "bool",
    "Let a run whose selection (shard, limit, sample) keeps no example of any dataset"
    " pass, e.g. a CI matrix with more shards than examples. Default: such a run fails",
)
CODE_NETWORK = _opt(
    "code-network",
    "str",
    "CodeExecution network policy: auto (no network where Linux allows it), deny"
    " (refuse to run without network isolation) or allow. Default: auto",
    "POLICY",
)
CODE_PACKAGES = _opt(
    "code-packages",
    "list",
    "CodeExecution: an installed distribution the generated code may import besides"
    " the standard library, repeatable (e.g. numpy). Default: the standard library only",
    "DIST",
)
CACHE = _opt(
    "cache",
    "str",
    "LLM response cache: once (replay what is cached, call and record the rest),"
    " replay (CI: a request not in the cache is that example's error and nothing is"
    " sent), refresh (call everything again, overwrite) or off. Default: once",
    "MODE",
)
CACHE_DIR = _opt(
    "cache-dir",
    "str",
    "Directory of the LLM cache file (llm-cache.sqlite3). Default: ctxbench under"
    " pytest's cache directory (.pytest_cache/d/ctxbench)",
    "DIR",
)
REPLAY_ALLOW = _opt(
    "replay-allow",
    "list",
    "Address a System may connect to itself while it runs, repeatable: HOST:PORT (a"
    " local service such as a vector store). Other connections a System opens past"
    " the LLM cache are refused in replay mode and counted in once and refresh",
    "HOST:PORT",
)
PRICE = _opt(
    "price",
    "list",
    "Price of a model, repeatable: MODEL=IN/OUT[/CACHED] in US dollars per million"
    " prompt/completion/cached prompt tokens; turns measured usage into cost_usd."
    " 'auto' (or auto:PROVIDER) prices the other models from genai-prices (extra"
    " 'prices'); no price is built in",
    "SPEC",
)
MAX_COST_USD = _opt(
    "max-cost-usd",
    "float",
    "Gate: fail the run when a suite's money spent (System and judge calls, priced"
    " with --ctxbench-price, cache hits included) is above X US dollars",
    "X",
)
MAX_COST_OF_PASS_USD = _opt(
    "max-cost-of-pass-usd",
    "float",
    "Gate: fail the run when a suite's money per passing example (System calls,"
    " priced with --ctxbench-price) is above X US dollars",
    "X",
)
MAX_LLM_TOKENS_PER_PASS = _opt(
    "max-llm-tokens-per-pass",
    "float",
    "Gate: fail the run when a suite's LLM tokens per passing example (prompt plus"
    " completion tokens of the System's calls, as the LLM's replies reported them) is"
    " above N",
    "N",
)
CONCURRENCY = _opt(
    "concurrency",
    "int",
    "System calls in flight at once in the whole run, xdist workers included (each"
    " worker gets its share). Default: 1, calls one after another as written",
    "N",
)
RATE_LIMIT = _opt(
    "rate-limit",
    "str",
    "Start at most R System and judge calls a second (R/s) or a minute (R/min), in"
    " the whole run",
    "R/s|R/min",
)
CALL_TIMEOUT = _opt(
    "timeout",
    "float",
    "Seconds a System call may last; a longer call is that example's error"
    " (CallTimeout) and the run goes on. Default: no limit",
    "SECONDS",
)
NO_STATUS = _opt(
    "no-status",
    "bool",
    "Do not show the status line (calls in flight, calls done, ETA) that a run with"
    " --ctxbench-concurrency shows on a terminal. It never shows in a CI log or a pipe",
)
TRANSCRIPTS = _opt(
    "transcripts",
    "str",
    "Which rows of the reports keep the records of their LLM calls (messages, reply,"
    " usage, latency, cache, retries; capped): failing (rows that failed or errored),"
    " all or off. Default: failing",
    "failing|all|off",
)

OPTIONS: tuple[Option, ...] = (
    DATASET,
    SYSTEM,
    EVALUATOR,
    LIMIT,
    SCORE_FIELD,
    THRESHOLD,
    MIN_PASS_RATE,
    MIN_MEAN_SCORE,
    MAX_COST_OF_PASS,
    MAX_ERROR_RATE,
    NO_GATE,
    GATE_PARTIAL,
    STRICT,
    JSON,
    MARKDOWN,
    HTML,
    NO_STEP_SUMMARY,
    TOKENIZER,
    TEXT_FIELDS,
    SAVE_BASELINE,
    BASELINE_RESPONSES,
    BASELINE,
    MAX_DROP,
    CONFIDENCE,
    PROXY,
    PROXY_NAME,
    MODEL,
    JUDGE_URL,
    JUDGE_MODEL,
    PROXY_TIMEOUT,
    PROXY_RETRIES,
    JUDGE_TIMEOUT,
    JUDGE_RETRIES,
    JUDGE_REPEAT,
    JUDGE_NO_LOGPROBS,
    JUDGE_LABELS,
    MIN_JUDGE_KAPPA,
    TASK,
    DATA_DIR,
    SAMPLE,
    SEED,
    SHARD,
    REPEAT,
    TRIALS,
    MAX_TRIALS,
    TRIAL_BUDGET,
    HUB,
    SKIP_BAD_RECORDS,
    MAX_LINE_BYTES,
    LIST_DATASETS,
    REQUIRE_SAME_EXAMPLES,
    FAMILYWISE,
    CODE_TIMEOUT,
    CODE_MEMORY,
    CODE_NETWORK,
    CODE_PACKAGES,
    ALLOW_EMPTY,
    CACHE,
    CACHE_DIR,
    REPLAY_ALLOW,
    PRICE,
    MAX_COST_USD,
    MAX_COST_OF_PASS_USD,
    MAX_LLM_TOKENS_PER_PASS,
    CONCURRENCY,
    RATE_LIMIT,
    CALL_TIMEOUT,
    NO_STATUS,
    TRANSCRIPTS,
)

#: Trials per example at most (--ctxbench-repeat, repeat=): each trial of each
#: example is one pytest item, built at collection time.
MAX_REPEAT = 1000
#: Times a judge may be asked the same question at most (--ctxbench-judge-repeat).
MAX_JUDGE_REPEAT = 100
#: Seconds per program at most (--ctxbench-code-timeout): a day.
MAX_CODE_TIMEOUT = 86400.0
#: Options naming a file the run writes. Every one is checked before the first
#: example runs (plugin/outputs.py): it may not resolve to an input (a dataset file, the
#: baseline, a file of the data directory, the tokenizer file) nor to another output,
#: and its directory must be writable. A new output option is added here, and read
#: from ``Settings.outputs`` (option dest -> absolute path).
OUTPUT_OPTIONS: list[Option] = [JSON, SAVE_BASELINE, MARKDOWN, HTML]

#: gate name → its option
GATE_OPTIONS = {
    "min_pass_rate": MIN_PASS_RATE,
    "min_mean_score": MIN_MEAN_SCORE,
    "max_cost_of_pass": MAX_COST_OF_PASS,
    "max_error_rate": MAX_ERROR_RATE,
    "max_cost_usd": MAX_COST_USD,
    "max_cost_of_pass_usd": MAX_COST_OF_PASS_USD,
    "max_llm_tokens_per_pass": MAX_LLM_TOKENS_PER_PASS,
}


def _argparse_help(opt: Option) -> str:
    return opt.help.replace("%", "%%")  # argparse %-formats help strings


def addoptions(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxbench", "LLM regression benchmarks (pytest-context-bench)")
    for opt in OPTIONS:
        if opt.kind == "list":
            group.addoption(opt.flag, action="append", dest=opt.dest, default=None,
                            metavar=opt.metavar, help=_argparse_help(opt))
            parser.addini(opt.ini, opt.help, type="linelist", default=[])
        elif opt.kind == "bool":
            group.addoption(opt.flag, action="store_true", dest=opt.dest, default=None,
                            help=_argparse_help(opt))
            parser.addini(opt.ini, opt.help, type="bool", default=False)
        else:
            # Numbers are parsed by us (from both sources) so that the error names the
            # flag or the ini key and shows the expected form.
            group.addoption(opt.flag, action="store", dest=opt.dest, default=None,
                            metavar=opt.metavar, help=_argparse_help(opt))
            parser.addini(opt.ini, opt.help, type="string", default="")


def ini_bool(config: pytest.Config, opt: Option) -> bool:
    """The boolean ini value of ``opt``; a value that is not one (``maybe``) is a
    UsageError naming the ini key, as the other ini errors do."""
    try:
        return bool(config.getini(opt.ini))
    except (ValueError, pytest.UsageError) as exc:
        # pytest says only "invalid truth value 'maybe'" (a ValueError before 9.2)
        raise pytest.UsageError(
            f"{opt.where(False)} must be true or false (or 1/0, yes/no, on/off):"
            f" {exc}"
        ) from None


def _parse_int(raw: str, where: str, minimum: int, maximum: int | None = None, why: str = "") -> int:
    expected = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    try:
        value = int(raw.strip())
    except ValueError:
        value = minimum - 1
    if value < minimum or (maximum is not None and value > maximum):
        raise pytest.UsageError(f"{where} must be an integer {expected}{why}, given: {raw!r}")
    return value


#: Why --ctxbench-repeat is bounded, in its error message.
_REPEAT_WHY = " (each trial of each example is one pytest item, made at collection time)"


def parse_float(
    raw: Any, where: str, *, lo: float = -math.inf, hi: float = math.inf, open_lo: bool = False
) -> float:
    """Parse a finite float in [lo, hi] (``(lo, hi]`` with open_lo); UsageError names ``where``."""
    if isinstance(raw, bool):
        raise pytest.UsageError(f"{where} must be a number, given: {raw!r}")
    try:
        value = float(raw.strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError):
        value = math.nan
    bad_range = value <= lo if open_lo else value < lo
    if not math.isfinite(value) or bad_range or value > hi:
        if math.isfinite(hi):
            expected = f"a number in {'(' if open_lo else '['}{lo:g}, {hi:g}]"
        elif math.isfinite(lo):
            expected = f"a number {'>' if open_lo else '>='} {lo:g}"
        else:
            expected = "a finite number"
        raise pytest.UsageError(f"{where} must be {expected}, given: {raw!r}")
    return value


# Gate limits: their allowed ranges.
_RANGES: dict[str, dict[str, Any]] = {
    "threshold": {},
    "min_pass_rate": {"lo": 0.0, "hi": 1.0},
    "min_mean_score": {},
    "max_cost_of_pass": {"lo": 0.0, "open_lo": True},
    "max_error_rate": {"lo": 0.0, "hi": 1.0},
    "max_cost_usd": {"lo": 0.0},
    "max_cost_of_pass_usd": {"lo": 0.0},
    "max_llm_tokens_per_pass": {"lo": 0.0},
}


@dataclass(frozen=True)
class Settings:
    """Everything the plugin reads from options and ini, validated once."""

    datasets: tuple[str, ...] = ()
    dataset_base: Path = Path(".")
    systems: tuple[str, ...] = ()
    #: --ctxbench-evaluator import paths, added to every command-line suite
    evaluators: tuple[str, ...] = ()
    limit: int | None = None
    score_field: str | None = None
    threshold: float = 0.7
    limits: dict[str, float | None] = field(default_factory=dict)
    no_gate: bool = False
    #: apply the gates to a run that pytest's own selection cut short
    gate_partial: bool = False
    strict: bool = False
    json_path: Path | None = None
    markdown_path: Path | None = None
    html_path: Path | None = None
    step_summary: bool = True
    tokenizer: str | None = None
    text_fields: tuple[str, ...] | None = None
    #: option dest -> how to name where its value came from in an error message
    where: dict[str, str] = field(default_factory=dict)
    data_dir: Path | None = None
    task: str | None = None
    proxies: tuple[tuple[str, str | None], ...] = ()
    save_baseline: Path | None = None
    baseline: Path | None = None
    max_drops: dict[str, Any] = field(default_factory=dict)
    confidence: float = 0.95
    #: --ctxbench-model; ``None``: each proxy's endpoint is asked for its only model
    model: str | None = None
    #: OpenAIProxy keyword arguments from the proxy-* options (timeout, max_retries)
    proxy_options: dict[str, Any] = field(default_factory=dict)
    #: evaluator name -> constructor keyword arguments (from the code-* options)
    evaluator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    sample: int | None = None
    seed: int = 0
    shard: tuple[int, int] | None = None
    repeat: int = 1
    #: --ctxbench-trials=adaptive: (max trials, budget), else None
    adaptive: tuple[int, float] | None = None
    hub: bool = False
    skip_bad_records: bool = False
    #: the cap on a .jsonl line (--ctxbench-max-line-bytes), None: the default
    max_line_bytes: int | None = None
    list_datasets: bool = False
    require_same_examples: bool = False
    #: --ctxbench-familywise: "none" or "holm"
    familywise: str = "none"
    allow_empty: bool = False
    #: option dest -> absolute (not resolved) path, for each OUTPUT_OPTIONS given
    outputs: dict[str, Path] = field(default_factory=dict)
    #: LLM cache mode (cache.MODES) and the directory of its file (None: default)
    cache_mode: str = "once"
    cache_dir: Path | None = None
    #: (host, port) a System may connect to past the cache (--ctxbench-replay-allow)
    replay_allow: tuple[tuple[str, int], ...] = ()
    #: model → Price, from --ctxbench-price (a pricing.PriceTable: ``auto`` too)
    prices: dict[str, Any] = field(default_factory=dict)
    #: System calls in flight in the whole run (--ctxbench-concurrency); None: one
    #: at a time in each process, as before the option existed
    concurrency: int | None = None
    #: calls started per second in the whole run (--ctxbench-rate-limit), or None
    rate_limit: float | None = None
    #: seconds a System call may last (--ctxbench-timeout), or None
    call_timeout: float | None = None
    #: no status line on the terminal (--ctxbench-no-status)
    no_status: bool = False
    #: which rows keep their LLM call records (--ctxbench-transcripts)
    transcripts: str = "failing"
    #: people's labels of examples (--ctxbench-judge-labels), or None
    judge_labels: Path | None = None
    #: the agreement below which judge-scored gates are not enforced
    #: (--ctxbench-min-judge-kappa), or None
    min_judge_kappa: float | None = None
    #: a saved baseline keeps the rows' answers (--ctxbench-baseline-responses)
    baseline_responses: bool = True

    @property
    def active(self) -> bool:
        """True when the command line or ini asks for a CLI benchmark run."""
        return bool(self.datasets)

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        inidir = config.inipath.parent if config.inipath else config.rootpath
        invdir = config.invocation_params.dir

        def get(opt: Option) -> tuple[Any, bool]:
            cli = config.getoption(opt.dest)
            if cli is not None:
                return cli, True
            if opt.kind == "bool":
                return ini_bool(config, opt), False
            ini = config.getini(opt.ini)
            if opt.kind == "list":
                return list(ini), False
            return (ini.strip() or None) if isinstance(ini, str) else ini, False

        datasets, ds_cli = get(DATASET)
        systems, _ = get(SYSTEM)
        evaluators, _ = get(EVALUATOR)
        for raw_list, opt in ((datasets, DATASET), (systems, SYSTEM), (evaluators, EVALUATOR)):
            for v in raw_list:
                if not str(v).strip():
                    raise pytest.UsageError(f"{opt.where(True)} got an empty value; expected {opt.metavar}")
        limit_raw, limit_cli = get(LIMIT)
        limit = _parse_int(str(limit_raw), LIMIT.where(limit_cli), 1) if limit_raw is not None else None

        def number(opt: Option, name: str) -> float | None:
            raw, from_cli = get(opt)
            if raw is None:
                return None
            return parse_float(raw, opt.where(from_cli), **_RANGES[name])

        def integer(opt: Option, minimum: int, maximum: int | None = None, why: str = "") -> int | None:
            raw, from_cli = get(opt)
            if raw is None:
                return None
            return _parse_int(str(raw), opt.where(from_cli), minimum, maximum, why)

        sample = integer(SAMPLE, 1)
        seed = integer(SEED, 0)
        repeat = integer(REPEAT, 1, MAX_REPEAT, _REPEAT_WHY)
        adaptive = _adaptive_settings(get, integer, repeat)
        shard_raw, shard_cli = get(SHARD)
        shard = _parse_shard(shard_raw, SHARD.where(shard_cli)) if shard_raw else None
        threshold = number(THRESHOLD, "threshold")
        limits = {name: number(opt, name) for name, opt in GATE_OPTIONS.items()}
        score_field, _ = get(SCORE_FIELD)
        json_raw, json_cli = get(JSON)
        json_path = None
        if json_raw:
            json_path = Path(json_raw)
            if not json_path.is_absolute():
                json_path = (invdir if json_cli else inidir) / json_path
            if json_path.is_dir():
                raise pytest.UsageError(f"{JSON.where(json_cli)} must be a file path, given a directory: {json_raw!r}")
        views: dict[str, Path | None] = {}
        for opt in (MARKDOWN, HTML):
            raw, from_cli = get(opt)
            views[opt.dest] = None
            if raw:
                path = Path(str(raw))
                if not path.is_absolute():
                    path = (invdir if from_cli else inidir) / path
                if path.is_dir():
                    raise pytest.UsageError(
                        f"{opt.where(from_cli)} must be a file path, given a directory: {raw!r}"
                    )
                views[opt.dest] = path
        text_raw, text_cli = get(TEXT_FIELDS)
        text_fields = None
        if text_raw is not None:  # an empty value is a mistake, not "the default"
            text_fields = tuple(f.strip() for f in str(text_raw).split(",") if f.strip())
            if not text_fields:
                raise pytest.UsageError(f"{TEXT_FIELDS.where(text_cli)} must list field names, e.g. 'context,question', given: {text_raw!r}")
        no_gate, _ = get(NO_GATE)
        gate_partial, _ = get(GATE_PARTIAL)
        strict, _ = get(STRICT)
        tokenizer, tok_cli = get(TOKENIZER)
        if tokenizer and _is_path_spec(str(tokenizer)) and not Path(tokenizer).is_absolute():
            # A file named in the ini file is relative to the ini file, like datasets.
            tokenizer = str((invdir if tok_cli else inidir) / str(tokenizer))
        where = {
            opt.dest: opt.where(config.getoption(opt.dest) is not None) for opt in OPTIONS
        }
        data_raw, data_cli = get(DATA_DIR)
        data_dir = None
        if data_raw:
            data_dir = Path(str(data_raw))
            if not data_dir.is_absolute():
                data_dir = (invdir if data_cli else inidir) / data_dir
            if not data_dir.is_dir():
                raise pytest.UsageError(
                    f"{DATA_DIR.where(data_cli)} must be an existing directory, given: {data_raw!r}"
                )
        def path_of(opt: Option) -> Path | None:
            raw, from_cli = get(opt)
            if not raw:
                return None
            p = Path(str(raw))
            return p if p.is_absolute() else (invdir if from_cli else inidir) / p

        outputs = {
            opt.dest: out for opt in OUTPUT_OPTIONS if (out := path_of(opt)) is not None
        }
        save_baseline = path_of(SAVE_BASELINE)
        baseline = path_of(BASELINE)
        drops_raw, drops_cli = get(MAX_DROP)
        max_drops: dict[str, Any] = {}
        if drops_raw:
            from ..baseline import parse_tolerance
            from ..errors import ConfigError

            if baseline is None:
                raise pytest.UsageError(
                    f"{MAX_DROP.where(drops_cli)} needs {BASELINE.flag}=PATH (the run to"
                    " compare with)"
                )
            for spec in drops_raw:
                try:
                    metric, tolerance = parse_tolerance(str(spec))
                except ConfigError as exc:
                    # The message starts with the flag; name the ini key instead when
                    # the value came from there.
                    text = str(exc)
                    if not drops_cli and text.startswith(MAX_DROP.flag):
                        text = MAX_DROP.where(False) + text[len(MAX_DROP.flag) :]
                    raise pytest.UsageError(text) from None
                max_drops[metric] = tolerance
        if adaptive is not None:
            trials_where = TRIALS.where(get(TRIALS)[1])
            if baseline is None:
                raise pytest.UsageError(
                    f"{trials_where}=adaptive needs {BASELINE.flag}=PATH, a baseline saved"
                    f" with {REPEAT.flag}={adaptive[0]} or more (it picks the examples to"
                    " ask again from the baseline's trials)"
                )
            if save_baseline is not None:
                raise pytest.UsageError(
                    f"{trials_where}=adaptive runs are compared with a baseline, not saved"
                    f" as one ({SAVE_BASELINE.flag}): save the baseline with"
                    f" {REPEAT.flag}={adaptive[0]} or more"
                )
        same_raw, same_cli = get(REQUIRE_SAME_EXAMPLES)
        if same_raw and baseline is None:
            raise pytest.UsageError(
                f"{REQUIRE_SAME_EXAMPLES.where(same_cli)} needs {BASELINE.flag}=PATH (the"
                " run whose examples this run must match)"
            )
        fam_raw, fam_cli = get(FAMILYWISE)
        if fam_raw is not None and baseline is None:
            raise pytest.UsageError(
                f"{FAMILYWISE.where(fam_cli)} needs {BASELINE.flag}=PATH (it adjusts the"
                " baseline's max-drop gates)"
            )
        conf_raw, conf_cli = get(CONFIDENCE)
        confidence = 0.95
        if conf_raw is not None:
            try:
                confidence = parse_float(conf_raw, CONFIDENCE.where(conf_cli), lo=0.0, hi=1.0, open_lo=True)
            except pytest.UsageError:
                confidence = math.nan
            if not 0.0 < confidence < 1.0:
                raise pytest.UsageError(
                    f"{CONFIDENCE.where(conf_cli)} must be a number in (0, 1), e.g. 0.95,"
                    f" given: {conf_raw!r}"
                )
        proxies_raw, proxy_cli = get(PROXY)
        names_raw, names_cli = get(PROXY_NAME)
        urls = [str(u).strip() for u in proxies_raw]
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise pytest.UsageError(
                    f"{PROXY.where(proxy_cli)} must be an http(s) URL such as"
                    f" http://localhost:7878, given: {url!r}"
                )
        names = [str(n).strip() for n in names_raw]
        if names and len(names) != len(urls):
            raise pytest.UsageError(
                f"{PROXY_NAME.where(names_cli)} was given {len(names)} time(s) for"
                f" {len(urls)} {PROXY.flag}; give one name per proxy, in order"
            )
        proxies: tuple[tuple[str, str | None], ...] = tuple(
            (url, names[i] if names else None) for i, url in enumerate(urls)
        )
        model_raw, _ = get(MODEL)
        judge_url, judge_cli = get(JUDGE_URL)
        judge_model, jm_cli = get(JUDGE_MODEL)
        if judge_model and not judge_url:
            raise pytest.UsageError(
                f"{JUDGE_MODEL.where(jm_cli)} needs {JUDGE_URL.flag} (the judge's endpoint)"
            )
        if judge_url and not str(judge_url).startswith(("http://", "https://")):
            raise pytest.UsageError(
                f"{JUDGE_URL.where(judge_cli)} must be an http(s) URL, given: {judge_url!r}"
            )
        proxy_options: dict[str, Any] = {}
        judge_client: dict[str, Any] = {}
        for opt, key, needs, target, present in (
            (PROXY_TIMEOUT, "timeout", PROXY, proxy_options, bool(urls)),
            (PROXY_RETRIES, "max_retries", PROXY, proxy_options, bool(urls)),
            (JUDGE_TIMEOUT, "timeout", JUDGE_URL, judge_client, bool(judge_url)),
            (JUDGE_RETRIES, "max_retries", JUDGE_URL, judge_client, bool(judge_url)),
        ):
            raw, from_cli = get(opt)
            if raw is None:
                continue
            if not present:
                raise pytest.UsageError(
                    f"{opt.where(from_cli)} needs {needs.flag} (the endpoint it applies to)"
                )
            if key == "timeout":
                target[key] = parse_float(raw, opt.where(from_cli), lo=0.0, open_lo=True)
            else:
                target[key] = _parse_int(str(raw), opt.where(from_cli), 0)
        task_raw, task_cli = get(TASK)
        task = _check_family(task_raw, TASK.where(task_cli)) if task_raw else None
        code: dict[str, Any] = {}
        judge_repeat = integer(JUDGE_REPEAT, 1, MAX_JUDGE_REPEAT)
        no_logprobs, nl_cli = get(JUDGE_NO_LOGPROBS)
        for opt, given, cli in (
            (JUDGE_REPEAT, judge_repeat is not None, get(JUDGE_REPEAT)[1]),
            (JUDGE_NO_LOGPROBS, bool(no_logprobs), nl_cli),
        ):
            if given and not judge_url:
                raise pytest.UsageError(
                    f"{opt.where(cli)} needs {JUDGE_URL.flag} (the judge it applies to)"
                )
        if judge_repeat is not None and judge_repeat > 1:
            judge_client["repeat"] = judge_repeat
        if no_logprobs:
            judge_client["logprobs"] = False
        judge_labels, min_kappa = _judge_labels(get, invdir, inidir)
        evaluator_options: dict[str, dict[str, Any]] = {}
        if judge_url:
            evaluator_options["judge"] = {
                "base_url": str(judge_url).strip(),
                # None: the endpoint's only model (plugin/__init__.py, _resolve_models)
                "model": str(judge_model).strip() if judge_model else None,
                **judge_client,
            }
        raw, from_cli = get(CODE_TIMEOUT)
        if raw is not None:
            code["timeout"] = parse_float(
                raw, CODE_TIMEOUT.where(from_cli), lo=0.0, hi=MAX_CODE_TIMEOUT, open_lo=True
            )
        raw, from_cli = get(CODE_MEMORY)
        if raw is not None:
            memory_mb = _parse_int(str(raw), CODE_MEMORY.where(from_cli), 0)
            if 0 < memory_mb < 64:  # the sandbox's own floor: Python needs more
                raise pytest.UsageError(
                    f"{CODE_MEMORY.where(from_cli)} must be 0 (no limit) or at least 64"
                    f" (MiB), given: {raw!r}"
                )
            code["memory_mb"] = memory_mb
        raw, from_cli = get(CODE_NETWORK)
        if raw is not None:
            policy = str(raw).strip()
            if policy not in ("auto", "deny", "allow"):
                raise pytest.UsageError(
                    f"{CODE_NETWORK.where(from_cli)} must be auto, deny or allow, given: {raw!r}"
                )
            code["network"] = policy
        listed, from_cli = get(CODE_PACKAGES)
        packages = tuple(n.strip() for v in listed for n in str(v).split(",") if n.strip())
        if packages:
            from ..errors import ConfigError
            from ..evaluators.sandbox import resolve_packages

            try:
                resolve_packages(packages)
            except ConfigError as exc:
                raise pytest.UsageError(f"{CODE_PACKAGES.where(from_cli)}: {exc}") from None
            code["packages"] = packages
        cache_mode, cache_dir, prices = _cache_settings(get, invdir, inidir)
        concurrency = integer(CONCURRENCY, 1)
        rate_raw, rate_cli = get(RATE_LIMIT)
        rate_limit = None
        if rate_raw is not None:
            from ..concurrency import parse_rate

            try:
                rate_limit = parse_rate(str(rate_raw))
            except ValueError as exc:
                raise pytest.UsageError(f"{RATE_LIMIT.where(rate_cli)} {exc}") from None
        raw, from_cli = get(CALL_TIMEOUT)
        call_timeout = None
        if raw is not None:
            call_timeout = parse_float(
                raw, CALL_TIMEOUT.where(from_cli), lo=0.0, open_lo=True
            )
        return cls(
            cache_mode=cache_mode,
            cache_dir=cache_dir,
            replay_allow=_replay_allow(get),
            prices=prices,
            concurrency=concurrency,
            rate_limit=rate_limit,
            call_timeout=call_timeout,
            no_status=bool(get(NO_STATUS)[0]),
            transcripts=_transcripts(get),
            baseline_responses=_baseline_responses(get),
            datasets=tuple(str(d).strip() for d in datasets),
            dataset_base=invdir if ds_cli else inidir,
            systems=tuple(str(s).strip() for s in systems),
            evaluators=tuple(dict.fromkeys(str(e).strip() for e in evaluators)),
            limit=limit,
            score_field=(score_field or None),
            threshold=0.7 if threshold is None else threshold,
            limits=limits,
            no_gate=bool(no_gate),
            gate_partial=bool(gate_partial),
            strict=bool(strict),
            json_path=json_path,
            markdown_path=views[MARKDOWN.dest],
            html_path=views[HTML.dest],
            step_summary=not get(NO_STEP_SUMMARY)[0],
            tokenizer=tokenizer or None,
            where=where,
            data_dir=data_dir,
            task=task,
            evaluator_options={**evaluator_options, **({"code_execution": code} if code else {})},
            proxies=proxies,
            save_baseline=save_baseline,
            baseline=baseline,
            max_drops=max_drops,
            confidence=confidence,
            model=str(model_raw).strip() if model_raw else None,
            proxy_options=proxy_options,
            text_fields=text_fields,
            sample=sample,
            seed=0 if seed is None else seed,
            shard=shard,
            repeat=1 if repeat is None else repeat,
            adaptive=adaptive,
            hub=bool(get(HUB)[0]),
            skip_bad_records=bool(get(SKIP_BAD_RECORDS)[0]),
            max_line_bytes=integer(MAX_LINE_BYTES, 1),
            list_datasets=bool(get(LIST_DATASETS)[0]),
            require_same_examples=bool(get(REQUIRE_SAME_EXAMPLES)[0]),
            familywise=_familywise(get),
            allow_empty=bool(get(ALLOW_EMPTY)[0]),
            outputs=outputs,
            judge_labels=judge_labels,
            min_judge_kappa=min_kappa,
        )

    def selection(self) -> Any:
        """The :class:`~pytest_context_bench.datasets.selection.Selection` of the
        command-line run."""
        from ..datasets.selection import Selection

        return Selection(self.limit, self.sample, self.seed, self.shard)


def _judge_labels(
    get: Callable[[Option], tuple[Any, bool]], invdir: Path, inidir: Path
) -> tuple[Path | None, float | None]:
    """(--ctxbench-judge-labels, --ctxbench-min-judge-kappa), validated: the file
    exists and reads (each bad line is one error naming it), and the kappa needs
    the labels."""
    raw, from_cli = get(JUDGE_LABELS)
    kappa_raw, kappa_cli = get(MIN_JUDGE_KAPPA)
    path = None
    if raw:
        path = Path(str(raw))
        if not path.is_absolute():
            path = (invdir if from_cli else inidir) / path
        from ..agreement import LabelsError, read_labels

        try:
            read_labels(path)
        except LabelsError as exc:
            raise pytest.UsageError(f"{JUDGE_LABELS.where(from_cli)}: {exc}") from None
    kappa = None
    if kappa_raw is not None:
        if path is None:
            raise pytest.UsageError(
                f"{MIN_JUDGE_KAPPA.where(kappa_cli)} needs {JUDGE_LABELS.flag}=PATH (the"
                " people's labels the judge's agreement is measured against)"
            )
        kappa = parse_float(kappa_raw, MIN_JUDGE_KAPPA.where(kappa_cli), lo=-1.0, hi=1.0)
    return path, kappa


def _familywise(get: Callable[[Option], tuple[Any, bool]]) -> str:
    """``none`` or ``holm`` (--ctxbench-familywise), validated."""
    raw, from_cli = get(FAMILYWISE)
    mode = "none" if raw is None else str(raw).strip().lower()
    if mode not in ("none", "holm"):
        raise pytest.UsageError(
            f"{FAMILYWISE.where(from_cli)} must be 'none' or 'holm', given: {raw!r}"
        )
    return mode


def _adaptive_settings(
    get: Callable[[Option], tuple[Any, bool]],
    integer: Callable[..., int | None],
    repeat: int | None,
) -> tuple[int, float] | None:
    """``(max trials, budget)`` of --ctxbench-trials=adaptive, validated, or None."""
    raw, from_cli = get(TRIALS)
    mode = str(raw).strip().lower() if raw is not None else None
    if mode is not None and mode != "adaptive":
        raise pytest.UsageError(
            f"{TRIALS.where(from_cli)} must be 'adaptive', given: {raw!r} (a fixed number"
            f" of trials is {REPEAT.flag}=K)"
        )
    budget_raw, budget_cli = get(TRIAL_BUDGET)
    max_raw, max_cli = get(MAX_TRIALS)
    if mode is None:
        for opt, given, cli in ((MAX_TRIALS, max_raw, max_cli), (TRIAL_BUDGET, budget_raw, budget_cli)):
            if given is not None:
                raise pytest.UsageError(f"{opt.where(cli)} needs {TRIALS.flag}=adaptive")
        return None
    if repeat is not None and repeat > 1:
        raise pytest.UsageError(
            f"{TRIALS.where(from_cli)}=adaptive and {REPEAT.flag}={repeat} exclude each"
            " other: give one"
        )
    max_trials = integer(MAX_TRIALS, 2, MAX_REPEAT, _REPEAT_WHY)
    k = 4 if max_trials is None else max_trials
    budget = 1.5
    if budget_raw is not None:
        budget = parse_float(budget_raw, TRIAL_BUDGET.where(budget_cli), lo=1.0, hi=float(k), open_lo=True)
    return k, budget


def _cache_settings(
    get: Callable[[Option], tuple[Any, bool]], invdir: Path, inidir: Path
) -> tuple[str, Path | None, dict[str, Any]]:
    """The cache mode, the cache directory and the price table, validated."""
    raw, from_cli = get(CACHE)
    mode = str(raw).strip().lower() if raw else "once"
    if raw:
        # Only then: the cache module imports sqlite3, which a run that does not
        # ask for ctxbench must not pay for (docs/overhead.md).
        from ..cache import MODES
    if raw and mode not in MODES:
        raise pytest.UsageError(
            f"{CACHE.where(from_cli)} must be one of {', '.join(MODES)}, given: {raw!r}"
            " (vcrpy/pytest-recording record modes: new_episodes = once, none ="
            " replay, all = refresh)"
        )
    raw, from_cli = get(CACHE_DIR)
    cache_dir = None
    if raw:
        cache_dir = Path(str(raw).strip()).expanduser()
        if not cache_dir.is_absolute():
            cache_dir = (invdir if from_cli else inidir) / cache_dir
        probe = cache_dir
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        if not probe.is_dir():
            raise pytest.UsageError(
                f"{CACHE_DIR.where(from_cli)} must be a directory, but {probe} is a"
                f" file, given: {raw!r}"
            )
        if mode != "off" and not os.access(probe, os.W_OK | os.X_OK):
            raise pytest.UsageError(
                f"{CACHE_DIR.where(from_cli)}: {probe} is not writable, given: {raw!r};"
                f" point it at a writable directory or pass {CACHE.flag}=off"
            )
    specs, from_cli = get(PRICE)
    from ..pricing import AUTO, PriceTable, parse_price

    prices = PriceTable()
    for spec in specs:
        word, _, provider = str(spec).strip().partition(":")
        if word.strip().lower() == AUTO and "=" not in str(spec):
            prices.auto = True
            provider = provider.strip()
            if _ and not provider:
                raise pytest.UsageError(
                    f"{PRICE.where(from_cli)}: auto:PROVIDER needs a provider id"
                    f" (openai, anthropic, google, ...), given: {spec!r}"
                )
            if provider and prices.provider not in (None, provider):
                raise pytest.UsageError(
                    f"{PRICE.where(from_cli)} names two providers for auto"
                    f" ({prices.provider!r}, {provider!r}); give one"
                )
            prices.provider = provider or prices.provider
            continue
        try:
            model, price = parse_price(str(spec).strip())
        except ValueError as exc:
            raise pytest.UsageError(f"{PRICE.where(from_cli)}: {exc}") from None
        if model in prices and prices[model] != price:
            raise pytest.UsageError(
                f"{PRICE.where(from_cli)} gives model {model!r} two different prices;"
                " give one"
            )
        prices[model] = price
    if prices.auto:
        _check_auto(prices, PRICE.where(from_cli))
    return mode, cache_dir, prices


def _replay_allow(
    get: Callable[[Option], tuple[Any, bool]],
) -> tuple[tuple[str, int], ...]:
    """--ctxbench-replay-allow's addresses, validated (HOST:PORT each)."""
    values, from_cli = get(REPLAY_ALLOW)
    out: list[tuple[str, int]] = []
    for value in values:
        from ..netguard import parse_address

        try:
            out.append(parse_address(str(value)))
        except ValueError as exc:
            raise pytest.UsageError(f"{REPLAY_ALLOW.where(from_cli)}: {exc}") from None
    return tuple(dict.fromkeys(out))


def _check_auto(prices: Any, where: str) -> None:
    """``auto`` needs genai-prices installed, and a named provider it knows (found
    without importing it unless ``auto`` is asked)."""
    import importlib.util

    if importlib.util.find_spec("genai_prices") is None:
        raise pytest.UsageError(
            f"{where}=auto prices models from the genai-prices package, which is not"
            " installed: pip install 'pytest-context-bench[prices]' (or give each"
            " model's price as MODEL=IN/OUT)"
        )
    if prices.provider:
        from genai_prices.data_snapshot import find_provider_by_id, get_snapshot

        known = get_snapshot().providers
        if find_provider_by_id(known, prices.provider) is None:
            raise pytest.UsageError(
                f"{where}=auto:{prices.provider}: genai-prices knows no provider"
                f" {prices.provider!r}; known: {', '.join(p.id for p in known)}"
            )


def _transcripts(get: Callable[[Option], tuple[Any, bool]]) -> str:
    """``--ctxbench-transcripts`` / ``ctxbench_transcripts``, checked."""
    from ..calls import TRANSCRIPT_MODES

    raw, from_cli = get(TRANSCRIPTS)
    mode = str(raw).strip().lower() if raw is not None else "failing"
    if mode not in TRANSCRIPT_MODES:
        raise pytest.UsageError(
            f"{TRANSCRIPTS.where(from_cli)} must be one of"
            f" {', '.join(TRANSCRIPT_MODES)}, given: {raw!r}"
        )
    return mode


def _baseline_responses(get: Callable[[Option], tuple[Any, bool]]) -> bool:
    """``--ctxbench-baseline-responses`` / ``ctxbench_baseline_responses``: on or
    off, checked."""
    raw, from_cli = get(BASELINE_RESPONSES)
    if raw is None:
        return True
    value = str(raw).strip().lower()
    if value not in ("on", "off"):
        raise pytest.UsageError(
            f"{BASELINE_RESPONSES.where(from_cli)} must be on or off, given: {raw!r}"
        )
    return value == "on"


def _parse_shard(raw: Any, where: str) -> tuple[int, int]:
    from ..datasets.selection import parse_shard
    from ..errors import ConfigError

    try:
        return parse_shard(str(raw))
    except ConfigError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None


def _check_family(raw: Any, where: str) -> str:
    from ..datasets import PRIMARY_SCORE

    family = str(raw).strip()
    if family not in PRIMARY_SCORE:
        raise pytest.UsageError(
            f"{where} must be one of {', '.join(PRIMARY_SCORE)}, given: {raw!r}"
        )
    return family


def _is_path_spec(spec: str) -> bool:
    return spec.endswith((".tiktoken", ".tiktoken.gz")) or "/" in spec or "\\" in spec


def marker_kwargs_parsers() -> dict[str, Callable[[Any, str], Any]]:
    """Validators for the marker's closed set of keyword arguments."""

    def dataset(v: Any, where: str) -> tuple[str, ...]:
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, (list, tuple)) or not items or not all(
            isinstance(x, str) and x.strip() for x in items
        ):
            raise pytest.UsageError(f"{where} must be a dataset spec or a non-empty list of them, given: {v!r}")
        return tuple(x.strip() for x in items)

    def limit(v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise pytest.UsageError(f"{where} must be an integer >= 1, given: {v!r}")
        return v

    def score_field(v: Any, where: str) -> str:
        if not isinstance(v, str) or not v.strip():
            raise pytest.UsageError(f"{where} must be a score name such as 'f1', given: {v!r}")
        return v.strip()

    def text_fields(v: Any, where: str) -> tuple[str, ...]:
        if not isinstance(v, (list, tuple)) or not v or not all(isinstance(x, str) and x for x in v):
            raise pytest.UsageError(f"{where} must be a non-empty list of field names, given: {v!r}")
        return tuple(v)

    def strict(v: Any, where: str) -> bool:
        if not isinstance(v, bool):
            raise pytest.UsageError(f"{where} must be True or False, given: {v!r}")
        return v

    def evaluators(v: Any, where: str) -> tuple[Any, ...]:
        items = list(v) if isinstance(v, (list, tuple)) else None
        if not items or not all(callable(getattr(e, "score", None)) for e in items):
            raise pytest.UsageError(f"{where} must be a non-empty list of evaluator objects (each with score()), given: {v!r}")
        return tuple(items)

    def integer(minimum: int, maximum: int | None = None, why: str = "") -> Callable[[Any, str], int]:
        expected = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"

        def check(v: Any, where: str) -> int:
            if (
                isinstance(v, bool)
                or not isinstance(v, int)
                or v < minimum
                or (maximum is not None and v > maximum)
            ):
                raise pytest.UsageError(f"{where} must be an integer {expected}{why}, given: {v!r}")
            return v

        return check

    def shard(v: Any, where: str) -> tuple[int, int]:
        if isinstance(v, tuple) and len(v) == 2:
            v = f"{v[0]}/{v[1]}"
        if not isinstance(v, str):
            raise pytest.UsageError(f"{where} must be a string 'I/N' such as '1/4', given: {v!r}")
        return _parse_shard(v, where)

    def num(name: str) -> Callable[[Any, str], float]:
        return lambda v, where: parse_float(v, where, **_RANGES[name])

    parsers: dict[str, Callable[[Any, str], Any]] = {
        "task": _check_family,
        "dataset": dataset,
        "limit": limit,
        "sample": integer(1),
        "seed": integer(0),
        "shard": shard,
        "repeat": integer(1, MAX_REPEAT, _REPEAT_WHY),
        "score_field": score_field,
        "threshold": num("threshold"),
        "text_fields": text_fields,
        "strict": strict,
        "evaluators": evaluators,
    }
    for name in GATE_OPTIONS:
        parsers[name] = num(name)
    return parsers
