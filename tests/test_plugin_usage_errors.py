"""Bad options, data and markers: one UsageError line, exit 4, before any example runs."""

from __future__ import annotations

import pytest

BAD_OPTIONS = [
    (["--ctxbench-threshold=abc"], "--ctxbench-threshold must be a finite number, given: 'abc'"),
    (["--ctxbench-limit=0"], "--ctxbench-limit must be an integer >= 1, given: '0'"),
    (["--ctxbench-limit=ten"], "--ctxbench-limit must be an integer >= 1, given: 'ten'"),
    (["--ctxbench-min-pass-rate=1.5"], "--ctxbench-min-pass-rate must be a number in [0, 1], given: '1.5'"),
    (["--ctxbench-max-cost-of-pass=0"], "--ctxbench-max-cost-of-pass must be a number > 0, given: '0'"),
    (["--ctxbench-max-error-rate=nan"], "--ctxbench-max-error-rate must be a number in [0, 1], given: 'nan'"),
    (["--ctxbench-dataset=missing.jsonl"], "--ctxbench-dataset: *missing.jsonl*does not exist*"),
    (["--ctxbench-dataset=hotpotq"], "--ctxbench-dataset: unknown dataset 'hotpotq'*"),
    (["--ctxbench-system=nosuchmod:x"], "--ctxbench-system: cannot import module 'nosuchmod'*"),
    (["--ctxbench-system=systems:nope"], "--ctxbench-system: module 'systems' has no attribute 'nope'*"),
    (["--ctxbench-system=systems:Nameless"], "--ctxbench-system: system 'systems:Nameless' (Nameless) needs a non-empty str `name`*"),
    (["--ctxbench-system=systems:echo", "--ctxbench-system=systems:make_echo"], "--ctxbench-system: two systems are named 'echo'*"),
    (["--ctxbench-tokenizer=nope.tiktoken"], "--ctxbench-tokenizer: Cannot read the tokenizer file *nope.tiktoken*"),
    (["--ctxbench-text-fields=,"], "--ctxbench-text-fields must list field names*"),
]


@pytest.mark.parametrize("args, message", BAD_OPTIONS, ids=[a[0] for a, _ in BAD_OPTIONS])
def test_bad_option_is_one_usage_error(project: pytest.Pytester, args: list[str], message: str) -> None:
    if not any(a.startswith("--ctxbench-dataset") for a in args):
        args = ["--ctxbench-dataset=qa.jsonl", *args]
    if not any(a.startswith("--ctxbench-system") for a in args):
        args = [*args, "--ctxbench-system=systems:echo"]
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "passed" not in result.stdout.str()


def test_bad_ini_value_names_the_ini_key(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\npythonpath = .\nctxbench_threshold = high\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ini option 'ctxbench_threshold' must be a finite number, given: 'high'"])


from pytest_context_bench.plugin.options import OPTIONS  # noqa: E402

BOOL_INI = [opt.ini for opt in OPTIONS if opt.kind == "bool"]


@pytest.mark.parametrize("key", BOOL_INI)
def test_a_bad_ini_boolean_names_its_key(project: pytest.Pytester, key: str) -> None:
    project.makeini(f"[pytest]\npythonpath = .\n{key} = maybe\n")
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    lines = [line for line in result.stderr.lines if line.strip()]
    assert lines == [
        f"ERROR: ini option {key!r} must be true or false (or 1/0, yes/no, on/off):"
        " invalid truth value 'maybe'"
    ]


def test_bad_dataset_line_names_file_line_and_field(project: pytest.Pytester) -> None:
    project.makefile(".jsonl", bad='{"id": 1, "question": "q", "answer": "a"}\n{"id": 2, "question": "q", "answer": null}\n')
    result = project.runpytest("--ctxbench-dataset=bad.jsonl", "--ctxbench-system=systems:echo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ctxbench-dataset: *bad.jsonl:2: field 'answer' must be*got null*"])


def test_duplicate_ids_and_malformed_json(project: pytest.Pytester) -> None:
    project.makefile(".jsonl", dup='{"id": 1, "question": "q", "answer": "a"}\n{"id": 1, "question": "q", "answer": "b"}\n')
    project.makefile(".jsonl", broken='{"id": 1, "question": "q", "answer": "a"}\n{"id": 2, "question": \n')
    dup = project.runpytest("--ctxbench-dataset=dup.jsonl", "--ctxbench-system=systems:echo")
    assert dup.ret == pytest.ExitCode.USAGE_ERROR
    dup.stderr.fnmatch_lines(["ERROR: *dup.jsonl:2: id '1' is already used by line 1*"])
    broken = project.runpytest("--ctxbench-dataset=broken.jsonl", "--ctxbench-system=systems:echo")
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    broken.stderr.fnmatch_lines(["ERROR: *broken.jsonl:2*"])


def test_empty_dataset(project: pytest.Pytester) -> None:
    project.makefile(".jsonl", empty="\n\n")
    result = project.runpytest("--ctxbench-dataset=empty.jsonl", "--ctxbench-system=systems:echo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *empty.jsonl*"])


def test_dataset_without_system(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctxbench-dataset=qa.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ctxbench-dataset needs a System: pass --ctxbench-system=*or define a `ctxbench_system` fixture*"])


def test_usage_error_under_xdist(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-limit=-1", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ctxbench-limit must be an integer >= 1*"])


MARKER_ERRORS = [
    ('dataset="qa.jsonl", limt=3', "*@pytest.mark.ctxbench has no keyword argument 'limt'; accepted: *"),
    ('dataset="qa.jsonl", limit=0', "*@pytest.mark.ctxbench(limit=...) must be an integer >= 1, given: 0"),
    ('dataset="qa.jsonl", min_pass_rate="high"', "*@pytest.mark.ctxbench(min_pass_rate=...) must be a number in [[]0, 1], given: 'high'"),
    ("limit=3", "*@pytest.mark.ctxbench needs dataset=...*"),
    ('dataset="nope.jsonl"', "*test_m.py::test_qa: @pytest.mark.ctxbench: *nope.jsonl*does not exist*"),
    ('"qa.jsonl"', "*takes keyword arguments only*"),
]


@pytest.mark.parametrize("kwargs, message", MARKER_ERRORS, ids=[k for k, _ in MARKER_ERRORS])
def test_bad_marker_argument(project: pytest.Pytester, kwargs: str, message: str) -> None:
    project.makepyfile(
        test_m=f"""
        import pytest

        def test_plain():
            pass

        @pytest.mark.ctxbench({kwargs})
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record({{**ctxbench_example, "response": "x"}})
        """
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "passed" not in result.stdout.str()


def test_marker_misuse(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl")
        def test_no_example():
            pass

        def test_no_marker(ctxbench_example):
            pass
        """
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: test_m.py::test_no_example is marked @pytest.mark.ctxbench but does not take the ctxbench_example fixture",
            "*",
            "ERROR: test_m.py::test_no_marker takes ctxbench_example but has no @pytest.mark.ctxbench(dataset=...) marker",
        ]
    )


def test_strict_markers_accepts_ctxbench(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.ctxbench(dataset="qa.jsonl", limit=1)
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record({**ctxbench_example, "response": ctxbench_example["answer"]})
        """
    )
    result = project.runpytest("--strict-markers")
    assert result.ret == 0
    result.assert_outcomes(passed=1)


def test_bad_marker_under_xdist_is_a_usage_error_and_nothing_runs(project: pytest.Pytester) -> None:
    # Workers cannot raise UsageError (xdist would show an INTERNALERROR): the message
    # comes as the collection error of the module, with no traceback, no test runs,
    # and the controller makes the exit status 4.
    project.makepyfile(
        test_m="""
        import pytest

        def test_plain():
            pass

        @pytest.mark.ctxbench(dataset="qa.jsonl", limt=3)
        def test_qa(ctxbench_example, ctxbench_record):
            ctxbench_record({**ctxbench_example, "response": "x"})
        """
    )
    result = project.runpytest("-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*ERROR collecting test_m.py*", "usage error (pytest-context-bench): test_m.py::test_qa: @pytest.mark.ctxbench has no keyword argument 'limt'*"])
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert "passed" not in out


def test_bad_tokenizer_under_xdist_is_one_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", "--ctxbench-tokenizer=nope_base", "-n", "2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ctxbench-tokenizer: Cannot load the tiktoken encoding 'nope_base'*"])
    assert len([l for l in result.stderr.lines if l.strip()]) == 1


def test_relative_tokenizer_file_in_ini_is_relative_to_the_ini(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\npythonpath = .\nctxbench_tokenizer = tok/missing.tiktoken\n")
    sub = project.mkdir("sub")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(sub)
        result = project.runpytest("--ctxbench-dataset=../qa.jsonl", "--ctxbench-system=systems:echo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: ini option 'ctxbench_tokenizer': Cannot read the tokenizer file {project.path / 'tok' / 'missing.tiktoken'}*"])


@pytest.mark.parametrize(
    "arg, message",
    [
        ("--ctxbench-code-memory=10", "--ctxbench-code-memory must be 0 (no limit) or at least 64 (MiB), given: '10'"),
        ("--ctxbench-code-network=off", "--ctxbench-code-network must be auto, deny or allow, given: 'off'"),
        ("--ctxbench-code-timeout=0", "--ctxbench-code-timeout must be a number in (0, 86400], given: '0'"),
        ("--ctxbench-task=poetry", "--ctxbench-task must be one of qa, *given: 'poetry'"),
        ("--ctxbench-data-dir=nope", "--ctxbench-data-dir must be an existing directory, given: 'nope'"),
    ],
)
def test_code_and_data_options(project: pytest.Pytester, arg: str, message: str) -> None:
    result = project.runpytest("--ctxbench-dataset=qa.jsonl", "--ctxbench-system=systems:echo", arg)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
