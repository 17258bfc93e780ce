"""The promptfoo reader (datasets/promptfoo.py): configs, tests files, CSV, notes,
errors, and plain YAML datasets. Every file is written to tmp_path; nothing runs
promptfoo. Where a test pins a promptfoo behaviour, its comment names it (each was
checked against promptfoo 0.121's own eval with its echo provider)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_context_bench.datasets import promptfoo
from pytest_context_bench.datasets.promptfoo import (
    ASSERTION_TYPES_RUN,
    PROMPTFOO_ASSERTION_TYPES,
    PromptfooSuite,
    load_promptfoo,
    looks_like_promptfoo,
    needs_yaml,
    read_yaml_examples,
    render_template,
)
from pytest_context_bench.errors import DatasetError

PROVIDERS_NOTE = (
    "providers (1): ctxbench runs your --ctxbench-system or --ctxbench-proxy instead"
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(path: Path) -> list[PromptfooSuite]:
    return load_promptfoo(str(path))


def error(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_promptfoo(str(path))
    return str(info.value)


# ------------------------------------------------------------------- a full config


def test_config_with_several_prompts_default_test_and_var_arrays(
    tmp_path: Path,
) -> None:
    config = write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        description: capitals
        prompts:
          - label: short answer
            raw: "Answer briefly: {{question}}"
          - file://chat.json
        providers: [openai:gpt-4o-mini]
        defaultTest:
          vars:
            tone: polite
          assert:
            - type: javascript
              value: output.length < 500
            - type: contains
              value: a
          threshold: 0.5
        tests:
          - description: Capital of France
            vars:
              question: What is the capital of France?
            assert:
              - type: icontains
                value: paris
              - type: similar
                value: Paris is the capital
          - vars:
              question: [What is 2+2?, What is 3+3?]
              n: [1, 2]
            threshold: 0.9
        """,
    )
    write(
        tmp_path,
        "chat.json",
        '[{"role": "system", "content": "Be {{tone}}."},'
        ' {"role": "user", "content": "{{question}}"}]',
    )
    first, second = load(config)

    assert first.tag == "promptfooconfig:short-answer"
    assert first.prompt_label == "short-answer"
    assert first.path == str(config)
    # defaultTest's assertions come first, then the test's own (promptfoo's
    # prepareTestCaseForEval); its vars sit under the test's.
    assert first.examples == (
        {
            "id": "capital-of-france",
            "description": "Capital of France",
            "tone": "polite",
            "question": "What is the capital of France?",
            "prompt": "Answer briefly: What is the capital of France?",
            "assert": [
                {"type": "contains", "value": "a"},
                {"type": "icontains", "value": "paris"},
            ],
            "threshold": 0.5,
        },
        # A var holding a list of strings expands the test; a list of numbers is one
        # value (promptfoo's generateVarCombinations looks at the first item).
        {
            "id": "2-1",
            "tone": "polite",
            "question": "What is 2+2?",
            "n": [1, 2],
            "prompt": "Answer briefly: What is 2+2?",
            "assert": [{"type": "contains", "value": "a"}],
            "threshold": 0.9,
        },
        {
            "id": "2-2",
            "tone": "polite",
            "question": "What is 3+3?",
            "n": [1, 2],
            "prompt": "Answer briefly: What is 3+3?",
            "assert": [{"type": "contains", "value": "a"}],
            "threshold": 0.9,
        },
    )
    assert first.lines == (17, 25, 25)
    assert first.sources == (str(config),) * 3
    assert first.notes == (
        PROVIDERS_NOTE,
        "javascript assertions (1, defaultTest): dropped",
        "similar assertions (1, test 1): dropped",
    )

    assert second.tag == "promptfooconfig:prompt2"
    assert second.prompt_label == "prompt2"
    assert [e["prompt"] for e in second.examples] == [
        [
            {"role": "system", "content": "Be polite."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
        [
            {"role": "system", "content": "Be polite."},
            {"role": "user", "content": "What is 2+2?"},
        ],
        [
            {"role": "system", "content": "Be polite."},
            {"role": "user", "content": "What is 3+3?"},
        ],
    ]
    # The examples of two suites are separate objects.
    second.examples[0]["assert"].append({"type": "equals", "value": "x"})
    assert len(first.examples[0]["assert"]) == 2


def test_one_prompt_gives_one_suite_tagged_with_the_stem(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "qa.yml",
        """
        prompts: "Q: {{q}}"
        tests:
          - vars: {q: one}
        """,
    )
    (suite,) = load(config)
    assert (suite.tag, suite.prompt_label) == ("qa", "prompt1")
    assert suite.examples == ({"id": "1", "q": "one", "prompt": "Q: one"},)
    assert suite.notes == ()


def test_json_config_lines_and_prompt_mapping_form(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "promptfooconfig.json",
        """
        {
          "prompts": {"About {{topic}}": "about", "Say {{topic}}": "say"},
          "tests": [
            {"vars": {"topic": "cats"}},
            {
              "description": "dogs",
              "vars": {"topic": "dogs"},
              "prompts": ["say"]
            }
          ]
        }
        """,
    )
    about, say = load(config)
    assert (about.tag, say.tag) == ("promptfooconfig:about", "promptfooconfig:say")
    # A test's `prompts:` limits the prompts it runs on (promptfoo's isAllowedPrompt).
    assert about.examples == ({"id": "1", "topic": "cats", "prompt": "About cats"},)
    assert about.lines == (4,)
    assert say.examples == (
        {"id": "1", "topic": "cats", "prompt": "Say cats"},
        {"id": "dogs", "description": "dogs", "topic": "dogs", "prompt": "Say dogs"},
    )
    assert say.lines == (4, 5)


def test_a_prompt_no_test_runs_on_is_named_in_the_notes(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts:
          - {raw: "A {{x}}", label: a}
          - {raw: "B {{x}}", label: b}
        tests:
          - vars: {x: 1}
            prompts: ["a*"]
        """,
    )
    a, b = load(config)
    assert [e["prompt"] for e in a.examples] == ["A 1"]
    assert b.examples == ()
    assert b.notes == (
        "no test runs on the prompt b: every test's prompts: names other prompts",
    )


# --------------------------------------------------------------------- defaultTest


def test_default_test_merge(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{a}} {{b}}"]
        defaultTest:
          vars: {a: A, b: B}
          assert:
            - type: contains
              value: A
          threshold: 0.3
          metadata: {team: core, level: 1}
          options:
            prefix: "PRE "
        tests:
          - vars: {b: own}
            metadata: {level: 2}
          - vars: {a: x}
            threshold: 0.8
            options:
              disableDefaultAsserts: true
              suffix: " SUF"
          - vars: {a: y}
            assert:
              - type: equals
                value: y B
        """,
    )
    (suite,) = load(config)
    assert suite.examples == (
        {
            "id": "1",
            "a": "A",
            "b": "own",
            "prompt": "PRE A own",
            "assert": [{"type": "contains", "value": "A"}],
            "threshold": 0.3,
            "metadata": {"team": "core", "level": 2},
        },
        # options.disableDefaultAsserts drops defaultTest's assertions only; the
        # prefix is defaultTest's and the suffix the test's own.
        {
            "id": "2",
            "a": "x",
            "b": "B",
            "prompt": "PRE x B SUF",
            "threshold": 0.8,
            "metadata": {"team": "core", "level": 1},
        },
        {
            "id": "3",
            "a": "y",
            "b": "B",
            "prompt": "PRE y B",
            "assert": [
                {"type": "contains", "value": "A"},
                {"type": "equals", "value": "y B"},
            ],
            "threshold": 0.3,
            "metadata": {"team": "core", "level": 1},
        },
    )


def test_default_test_from_a_file(tmp_path: Path) -> None:
    write(tmp_path, "defaults.yaml", "vars: {lang: en}\nassert:\n  - type: is-json\n")
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{q}} ({{lang}})"]
        defaultTest: file://defaults.yaml
        tests:
          - vars: {q: hi}
        """,
    )
    (suite,) = load(config)
    assert suite.examples == (
        {
            "id": "1",
            "lang": "en",
            "q": "hi",
            "prompt": "hi (en)",
            "assert": [{"type": "is-json"}],
        },
    )


def test_config_metadata_reaches_tests_only_without_an_inline_default_test(
    tmp_path: Path,
) -> None:
    # promptfoo's config merge gives an inline defaultTest an empty metadata, which
    # replaces the config's top-level metadata.
    without = write(
        tmp_path,
        "a.yaml",
        """
        prompts: ["{{q}}"]
        metadata: {owner: me}
        tests:
          - vars: {q: hi}
        """,
    )
    with_default = write(
        tmp_path,
        "b.yaml",
        """
        prompts: ["{{q}}"]
        metadata: {owner: me}
        defaultTest: {vars: {z: 1}}
        tests:
          - vars: {q: hi}
        """,
    )
    assert load(without)[0].examples[0]["metadata"] == {"owner": "me"}
    assert "metadata" not in load(with_default)[0].examples[0]


def test_a_config_with_only_a_default_test_runs_it_once(tmp_path: Path) -> None:
    # promptfoo runs a config that has no tests as one test (defaultTest's).
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["Write a haiku"]
        defaultTest:
          assert:
            - type: icontains
              value: moon
        """,
    )
    (suite,) = load(config)
    assert suite.examples == (
        {
            "id": "1",
            "prompt": "Write a haiku",
            "assert": [{"type": "icontains", "value": "moon"}],
        },
    )
    assert suite.lines == (3,)


# ------------------------------------------------------------------------------- vars


def test_var_expansion_is_a_cartesian_product_in_var_order(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{x}}{{y}}"]
        tests:
          - description: grid
            vars: {x: [a, b], y: ["1", "2"]}
          - vars: {x: [a, b]}
            options: {disableVarExpansion: true}
        """,
    )
    (suite,) = load(config)
    assert [(e["id"], e["prompt"]) for e in suite.examples] == [
        ("grid-1", "a1"),
        ("grid-2", "a2"),
        ("grid-3", "b1"),
        ("grid-4", "b2"),
        ("2", '["a","b"]'),
    ]


def test_file_vars(tmp_path: Path) -> None:
    write(tmp_path, "docs/a.txt", "  Doc A\n\n")
    write(tmp_path, "docs/b.txt", "Doc B\n")
    write(tmp_path, "data.yaml", "k: v\nn: [1, 2.5]\n")
    write(tmp_path, "data.json", '{"x": 1}\n')
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{doc}} | {{yml}} | {{js}} | {{q}}"]
        tests:
          - vars:
              doc: file://docs/a.txt
              yml: file://data.yaml
              js: file://data.json
              q: "About {{doc}}"
          - vars:
              doc: file://docs/*.txt
              yml: ""
              js: ""
              q: "line\\n"
        """,
    )
    (suite,) = load(config)
    # promptfoo's renderPrompt: text files trimmed, YAML as compact JSON, JSON as its
    # text; one trailing newline cut from every string var; a var's `{{other}}`
    # replaced by the other var. A file:// glob expands the test, in sorted order.
    assert suite.examples[0] == {
        "id": "1",
        "doc": "Doc A",
        "yml": '{"k":"v","n":[1,2.5]}',
        "js": '{"x": 1}',
        "q": "About Doc A",
        "prompt": 'Doc A | {"k":"v","n":[1,2.5]} | {"x": 1} | About Doc A',
    }
    assert [(e["id"], e["doc"], e["q"]) for e in suite.examples[1:]] == [
        ("2-1", "Doc A", "line"),
        ("2-2", "Doc B", "line"),
    ]


def test_vars_from_a_vars_file(tmp_path: Path) -> None:
    write(tmp_path, "tests/vars.yaml", "topic: birds\nlang: de\n")
    write(
        tmp_path,
        "tests/t.yaml",
        """
        - vars: file://vars.yaml
          assert:
            - type: contains
              value: birds
        """,
    )
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{topic}} in {{lang}}"]
        tests: file://tests/t.yaml
        """,
    )
    (suite,) = load(config)
    # A vars file is read from the directory of the tests file that names it.
    assert suite.examples[0]["prompt"] == "birds in de"
    assert suite.sources == (str(tmp_path / "tests" / "t.yaml"),)
    assert suite.lines == (1,)


def test_var_names_that_collide_with_example_fields(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{q}}"]
        tests:
          - vars:
              q: a
              threshold: 2
        """,
    )
    assert error(config) == (
        f"{config}:5: the var 'threshold' has the name of a field ctxbench sets on"
        " every example (id, dataset, assert, prompt, threshold, task, vars_). Rename"
        " the var (in vars: and in the prompts that use it)."
    )
    described = write(
        tmp_path,
        "d.yaml",
        """
        prompts: ["{{description}}"]
        tests:
          - description: a test
            vars: {description: a shoe}
        """,
    )
    assert error(described) == (
        f"{described}:3: the test has a description and a var named 'description';"
        " both would be the example's 'description' field. Rename the var."
    )


def test_a_prompt_var_is_the_prompt_when_there_are_no_prompts(tmp_path: Path) -> None:
    # promptfoo's prompt is "{{prompt}}" when a config has none.
    config = write(
        tmp_path,
        "c.yaml",
        """
        tests:
          - vars: {prompt: "Hello there", other: 1}
          - vars: {other: 2}
        """,
    )
    (suite,) = load(config)
    assert suite.prompt_label is None
    assert suite.tag == "c"
    assert suite.examples == (
        {"id": "1", "prompt": "Hello there", "other": 1},
        {"id": "2", "other": 2},
    )


# ------------------------------------------------------------------------- prompts


def test_prompt_files(tmp_path: Path) -> None:
    write(tmp_path, "prompts/two.txt", "One {{q}}\n---\n\n  Two {{q}}  \n---\n")
    write(tmp_path, "prompts/chat.yaml", "- role: user\n  content: 'Y {{q}}'\n")
    write(tmp_path, "prompts/plain.md", "# Title\n{{q}}\n")
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts:
          - id: file://prompts/two.txt
            label: pair
          - prompts/chat.yaml
          - file://prompts/plain.md
          - "Inline: {{q}}"
        tests:
          - vars: {q: x}
        """,
    )
    suites = load(config)
    # A .txt file holds prompts split on `---` lines (promptfoo's processTxtFile);
    # a YAML prompt is its JSON, so a list of messages is a chat prompt.
    assert [(s.prompt_label, s.examples[0]["prompt"]) for s in suites] == [
        ("pair-1", "One x"),
        ("pair-2", "Two x"),
        ("prompt3", [{"role": "user", "content": "Y x"}]),
        ("prompt4", "# Title\nx\n"),
        ("prompt5", "Inline: x"),
    ]
    assert [s.tag for s in suites][:2] == ["c:pair-1", "c:pair-2"]


def test_labels_are_unique_and_have_no_spaces(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts:
          - {raw: "a {{q}}", label: "My prompt: v1"}
          - {raw: "b {{q}}", label: "My prompt: v1"}
          - {raw: "c {{q}}", label: "!!!"}
        tests:
          - vars: {q: x}
        """,
    )
    assert [s.prompt_label for s in load(config)] == [
        "My-prompt-v1",
        "My-prompt-v1-2",
        "prompt3",
    ]


def test_a_json_prompt_that_is_not_a_chat_is_rendered_as_json_text(
    tmp_path: Path,
) -> None:
    # promptfoo parses a JSON prompt, renders the strings in it and writes it back
    # with two-space indents.
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts:
          - '{"task": "{{q}}", "n": 2}'
        tests:
          - vars: {q: x}
        """,
    )
    assert load(config)[0].examples[0]["prompt"] == '{\n  "task": "x",\n  "n": 2\n}'


def test_nunjucks_beyond_substitution_is_an_error(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts:
          - label: fancy
            raw: "{% if q %}{{ q }}{% endif %}"
        tests:
          - vars: {q: x}
        """,
    )
    assert error(config) == (
        f"{config}:2: the prompt 'fancy' ('{{% if q %}}{{{{ q }}}}{{% endif %}}')"
        " cannot be rendered: it uses a {% ... tag, and ctxbench renders only"
        " {{var}} substitution ({{var}}, {{var.key}}, {{env.NAME}}, the dump"
        " filter). Rewrite the prompt with plain {{var}} substitution."
    )
    filtered = write(
        tmp_path, "f.yaml", "prompts: ['{{ q | upper }}']\ntests: [{vars: {q: x}}]\n"
    )
    assert "it uses the filter 'upper'" in error(filtered)
    assert error(filtered).startswith(f"{filtered}:1: the prompt 'prompt1'")


def test_prompt_functions_are_an_error(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: [file://make_prompt.py:build]
        tests: [{vars: {q: x}}]
        """,
    )
    assert error(config) == (
        f"{config}:1: the prompt 'file://make_prompt.py:build' is a function"
        " (make_prompt.py); ctxbench renders only text and chat prompts. Write the"
        " prompt as text, or as a JSON chat file."
    )


def test_missing_vars_render_empty_and_are_noted(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["[{{q}}] [{{ctx}}]"]
        tests:
          - vars: {q: a}
          - vars: {q: b, ctx: c}
          - vars: {q: d}
        """,
    )
    (suite,) = load(config)
    assert [e["prompt"] for e in suite.examples] == ["[a] []", "[b] [c]", "[d] []"]
    assert suite.notes == (
        (
            "the var 'ctx' the prompt uses is not set (tests 1 and 3): rendered as empty"
            " text, as promptfoo does"
        ),
    )


def test_render_template() -> None:
    variables = {
        "s": "hi",
        "i": 3,
        "f": 2.0,
        "g": 2.5,
        "t": True,
        "n": None,
        "obj": {"a": 1, "b": {"c": "x"}},
        "lst": [1, "two"],
    }
    # What Nunjucks prints for these (checked with promptfoo's nunjucks), except
    # lists and mappings, which are written as JSON here.
    assert (
        render_template("{{s}}|{{ i }}|{{f}}|{{g}}|{{t}}|{{n}}|{{missing}}", variables)
        == "hi|3|2|2.5|true||"
    )
    assert (
        render_template("{{obj.a}}/{{ obj.b.c }}/{{obj.zz}}/{{missing.x}}", variables)
        == "1/x//"
    )
    assert (
        render_template("{{obj}} {{lst}}", variables)
        == '{"a":1,"b":{"c":"x"}} [1,"two"]'
    )
    assert render_template(
        "{{ s | dump }} {{obj|dump}} {{ n | dump | safe }}", variables
    ) == ('"hi" {"a":1,"b":{"c":"x"}} null')
    assert render_template("{{ env.WHO }}", {}, env={"WHO": "me"}) == "me"
    # A partial tag makes the whole template literal (autoWrapRawIfPartialNunjucks).
    assert render_template("{{ open\n{{s}}", variables) == "{{ open\n{{s}}"
    for template, reason in [
        ("{% for x in y %}", "it uses a {% ... tag"),
        ("{# note #}", "it uses a {# ... tag"),
        ("{{ s | upper }}", "it uses the filter 'upper'"),
        ("{{ a + b }}", "it uses the expression {{ a + b }}"),
        ("{{- s }}", "it uses the expression {{- s }}"),
    ]:
        with pytest.raises(
            ValueError,
            match="^"
            + reason.replace("{", r"\{").replace("+", r"\+").replace("|", r"\|")
            + "$",
        ):
            render_template(template, variables)


# ----------------------------------------------------------------------- tests files


def test_tests_from_files_globs_and_inline(tmp_path: Path) -> None:
    write(tmp_path, "tests/b.yaml", "- vars: {q: b1}\n- vars: {q: b2}\n")
    write(tmp_path, "tests/a.yaml", "vars: {q: a1}\n")
    write(tmp_path, "more.jsonl", '{"vars": {"q": "j1"}}\n\n{"vars": {"q": "j2"}}\n')
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{q}}"]
        tests:
          - vars: {q: inline}
          - file://tests/*.yaml
          - more.jsonl
        """,
    )
    (suite,) = load(config)
    # A glob's files are read in sorted order; a file may hold one test (a mapping).
    assert [e["q"] for e in suite.examples] == ["inline", "a1", "b1", "b2", "j1", "j2"]
    assert suite.lines == (3, 1, 1, 2, 1, 3)
    assert suite.sources == (
        str(config),
        str(tmp_path / "tests" / "a.yaml"),
        str(tmp_path / "tests" / "b.yaml"),
        str(tmp_path / "tests" / "b.yaml"),
        str(tmp_path / "more.jsonl"),
        str(tmp_path / "more.jsonl"),
    )
    assert [e["id"] for e in suite.examples] == ["1", "2", "3", "4", "5", "6"]


def test_a_json_tests_file_named_alone_gets_row_descriptions(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.json",
        '[\n  {"vars": {"q": "a"}},\n  {"description": "Named", "vars": {"q": "b"}}\n]\n',
    )
    alone = write(tmp_path, "a.yaml", "prompts: ['{{q}}']\ntests: file://t.json\n")
    listed = write(tmp_path, "b.yaml", "prompts: ['{{q}}']\ntests: [file://t.json]\n")
    # promptfoo's readStandaloneTestsFile names an undescribed JSON test "Row #<n>";
    # a file in a list of tests goes through loadTestsFromGlob, which does not.
    assert [(e["id"], e.get("description")) for e in load(alone)[0].examples] == [
        ("row-1", "Row #1"),
        ("named", "Named"),
    ]
    assert [(e["id"], e.get("description")) for e in load(listed)[0].examples] == [
        ("1", None),
        ("named", "Named"),
    ]
    assert load(alone)[0].lines == (2, 3)


def test_a_bare_tests_list(tmp_path: Path) -> None:
    tests = write(
        tmp_path,
        "cases.yaml",
        """
        - description: greets
          vars: {name: Ada}
          assert:
            - type: icontains
              value: ada
        - vars: {name: Bob}
        """,
    )
    assert looks_like_promptfoo(str(tests))
    (suite,) = load(tests)
    assert suite.tag == "cases"
    assert suite.prompt_label is None
    assert suite.examples == (
        {
            "id": "greets",
            "description": "greets",
            "name": "Ada",
            "assert": [{"type": "icontains", "value": "ada"}],
        },
        {"id": "2", "name": "Bob"},
    )
    assert suite.lines == (1, 6)
    assert suite.notes == ()


# ---------------------------------------------------------------------------- CSV


CSV_EXPECTED = [
    # (cell, assertion) as promptfoo's assertionFromString reads the cell.
    ("contains: foo", {"type": "contains", "value": "foo"}),
    ("icontains:Bar ", {"type": "icontains", "value": "Bar"}),
    ("regex: ^a.*", {"type": "regex", "value": "^a.*"}),
    ("not-contains: x", {"type": "not-contains", "value": "x"}),
    ("starts-with: He", {"type": "starts-with", "value": "He", "threshold": 0.75}),
    ("is-json", {"type": "is-json"}),
    ("equals: exact", {"type": "equals", "value": "exact"}),
    (
        "levenshtein(5): kitten",
        {"type": "levenshtein", "value": "kitten", "threshold": 5},
    ),
    ("python: len(output) > 3", {"type": "python", "value": "len(output) > 3"}),
    ("grade: polite", {"type": "llm-rubric", "value": " polite"}),
    ("llm-rubric: kind", {"type": "llm-rubric", "value": " kind"}),
    ("Plain answer", {"type": "equals", "value": "Plain answer"}),
    (
        'contains-any: a, b, "c, d"',
        {"type": "contains-any", "value": ["a", "b", "c, d"]},
    ),
    ("icontains-all:x,y", {"type": "icontains-all", "value": ["x", "y"]}),
    ("latency(500)", {"type": "latency", "threshold": 500}),
    ("cost(0.01)", {"type": "cost", "threshold": 0.01}),
    ("select-best: x", {"type": "equals", "value": "select-best: x"}),
    ("CONTAINS: up", {"type": "equals", "value": "CONTAINS: up"}),
    ("regex:", {"type": "regex", "value": ""}),
]


@pytest.mark.parametrize(
    ("cell", "assertion"), CSV_EXPECTED, ids=[c for c, _ in CSV_EXPECTED]
)
def test_csv_expected_cells(
    tmp_path: Path, cell: str, assertion: dict[str, Any]
) -> None:
    quoted = '"' + cell.replace('"', '""') + '"'
    tests = write(tmp_path, "t.csv", f"q,__expected\nhello,{quoted}\n")
    (suite,) = load(tests)
    assert suite.examples[0]["assert"] == [assertion]


def test_csv_cells_promptfoo_reads_but_ctxbench_does_not_run(tmp_path: Path) -> None:
    tests = write(
        tmp_path,
        "t.csv",
        """
        q,__expected1,__expected2
        a,javascript: output.length,similar(0.9): hi
        b,fn: x,"webhook: http://x"
        """,
    )
    (suite,) = load(tests)
    assert suite.examples[0]["assert"] == []  # all dropped: the key stays, empty
    assert suite.notes == (
        "javascript assertions (2, tests 1 and 2): dropped",
        "similar assertions (1, test 1): dropped",
        "webhook assertions (1, test 2): dropped",
    )


def test_csv_tests_file(tmp_path: Path) -> None:
    write(tmp_path, "check.py", "def fn(output, context):\n    return True\n")
    tests = write(
        tmp_path,
        "t.csv",
        "\ufeffquestion ,__expected1,__expected2,__metric,__threshold,"
        "__config:__expected2:threshold,__metadata:tags[],__metadata:kind,"
        "__prefix,__description,empty\n"
        'c1,starts-with: Fir,not-contains: zzz,m1,0.7,0.4,"a, b\\, c",x,PRE ,,\n'
        '"multi\nline",file://check.py:fn,,,,,,,,Second,\n',
    )
    (suite,) = load(tests)
    assert suite.examples == (
        {
            "id": "row-1",
            "description": "Row #1",
            "question": "c1",
            "empty": "",  # an empty cell is an empty string, as in promptfoo
            "assert": [
                {
                    "type": "starts-with",
                    "value": "Fir",
                    "threshold": 0.75,
                    "metric": "m1",
                },
                {
                    "type": "not-contains",
                    "value": "zzz",
                    "threshold": 0.4,
                    "metric": "m1",
                },
            ],
            "threshold": 0.7,
            # promptfoo also copies a __config threshold into the metadata.
            "metadata": {"tags": ["a", "b, c"], "kind": "x", "threshold": 0.4},
        },
        {
            "id": "second",
            "description": "Second",
            "question": "multi\nline",
            "empty": "",
            "assert": [
                {"type": "python", "value": f"file://{tmp_path / 'check.py'}:fn"}
            ],
        },
    )
    assert suite.lines == (2, 3)
    assert suite.notes == ()


def test_csv_prefix_applies_to_the_prompt(tmp_path: Path) -> None:
    write(tmp_path, "t.csv", "q,__prefix,__suffix\na,Hey ,!\nb,,\n")
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ['{{q}}']
        defaultTest: {options: {prefix: "D "}}
        tests: file://t.csv
        """,
    )
    (suite,) = load(config)
    # An empty __prefix cell falls back to defaultTest's prefix (promptfoo's
    # `options.prefix || defaultTest.options.prefix`).
    assert [e["prompt"] for e in suite.examples] == ["Hey a!", "D b"]


def test_csv_special_column_notes(tmp_path: Path) -> None:
    tests = write(tmp_path, "t.csv", "q,_expected,__metadata,__config:x\na,b,c,d\n")
    (suite,) = load(tests)
    assert suite.examples == (
        {"id": "row-1", "description": "Row #1", "q": "a", "_expected": "b"},
    )
    assert suite.notes == (
        (
            f"columns with one leading underscore (_expected, in {tests}): read as vars,"
            " as promptfoo does; did you mean __expected?"
        ),
        (
            f"the __metadata column (in {tests}): ignored, as promptfoo does; name the"
            " key, e.g. __metadata:category"
        ),
        (
            f"__config columns of an unknown form (__config:x, in {tests}): ignored, as"
            " promptfoo does; write __config:__expected<N>:threshold"
        ),
    )


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "q,__threshold\na,high\n",
            2,
            (
                "the __threshold cell 'high' is not a number. Write a number (0.8), or"
                " leave the cell empty."
            ),
        ),
        (
            "q,__expected\na,b,c\n",
            2,
            (
                "the row has 3 cells but the header (line 1) names 2 columns. Make every"
                " row as wide as the header."
            ),
        ),
        (
            "q,q\na,b\n",
            1,
            "the header names column 'q' twice (columns 1 and 2). Rename one of them.",
        ),
        (
            "q,__expected\n",
            None,
            "the file has a header row (line 1) but no tests. Add at least one row.",
        ),
        (
            "q,__config:__expected:weight\na,1\n",
            2,
            (
                "the column __config:__expected:weight sets 'weight'; the only key a"
                " __config column may set is threshold."
            ),
        ),
        (
            'q,__expected\na,"contains-any: ""x"" y"\n',
            2,
            (
                "the __expected cell cannot be read: a quoted value is followed by text"
                " before the next comma. Fix the cell."
            ),
        ),
    ],
)
def test_csv_errors(tmp_path: Path, text: str, line: int | None, message: str) -> None:
    tests = write(tmp_path, "t.csv", text)
    where = f"{tests}:{line}: " if line is not None else f"{tests}: "
    assert error(tests) == where + message


# --------------------------------------------------------------------- assertions


def test_assertion_filtering(tmp_path: Path) -> None:
    write(tmp_path, "expected.txt", "  From a file \n")
    write(tmp_path, "schema.yaml", "type: object\n")
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{q}}"]
        tests:
          - vars: {q: a}
            assert:
              - type: contans
                value: typo kept for the engine
              - type: equals
                value: file://expected.txt
              - type: is-json
                value: file://schema.yaml
              - type: python
                value: file://checks/grade.py:score
              - type: contains
                value: file://compute.js
              - type: g-eval
                value: clear
              - type: assert-set
                threshold: 0.5
                assert:
                  - type: not-contains
                    value: x
                  - type: factuality
                    value: y
              - type: assert-set
                assert:
                  - type: moderation
          - vars: {q: b}
            assert:
              - type: javascript
                value: "true"
          - vars: {q: c}
        """,
    )
    (suite,) = load(config)
    assert suite.examples[0]["assert"] == [
        {"type": "contans", "value": "typo kept for the engine"},
        {"type": "equals", "value": "From a file"},
        {"type": "is-json", "value": {"type": "object"}},
        {"type": "python", "value": f"file://{tmp_path / 'checks' / 'grade.py'}:score"},
        {
            "type": "assert-set",
            "threshold": 0.5,
            "assert": [{"type": "not-contains", "value": "x"}],
        },
    ]
    assert suite.examples[1]["assert"] == []
    assert "assert" not in suite.examples[2]
    assert suite.notes == (
        "assertions whose value a script computes (file://...) (1, test 1): dropped",
        "g-eval assertions (1, test 1): dropped",
        "factuality assertions (1, test 1): dropped",
        "moderation assertions (1, test 1): dropped",
        "assert-set assertions (1, test 1): dropped: none of their assertions is run",
        "javascript assertions (1, test 2): dropped",
    )


def test_assertion_type_tables() -> None:
    assert len(ASSERTION_TYPES_RUN) == 33
    assert {"equals", "not-equals", "not-llm-rubric", "assert-set", "cost"} <= (
        ASSERTION_TYPES_RUN
    )
    assert "similar" not in ASSERTION_TYPES_RUN
    assert ASSERTION_TYPES_RUN < PROMPTFOO_ASSERTION_TYPES
    assert {"not-g-eval", "select-best", "trajectory:tool-used"} <= (
        PROMPTFOO_ASSERTION_TYPES
    )


# -------------------------------------------------------------------------- notes


def test_notes_name_everything_not_run(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts:
          - raw: "{{q}}"
            config: {temperature: 0}
        providers: [a, b, c]
        scenarios: [{config: []}]
        derivedMetrics: [{name: f1, value: "2*p*r/(p+r)"}]
        nunjucksFilters: {up: file://up.js}
        extensions: [file://hooks.js:beforeAll]
        outputPath: out.json
        evaluateOptions: {maxConcurrency: 2, repeat: 3}
        cosmetics: true
        defaultTest:
          options:
            provider: openai:gpt-4o
          provider: echo
        tests:
          - vars: {q: a}
            options: {transform: output.trim()}
            providerOutput: canned
          - vars: {q: b}
            options: {transform: output.trim(), postprocess: x}
            provider: other
        """,
    )
    (suite,) = load(config)
    assert suite.notes == (
        (
            "providers (3): ctxbench runs your --ctxbench-system or --ctxbench-proxy"
            " instead"
        ),
        "scenarios (1): not run",
        "derivedMetrics (1): not computed",
        "nunjucksFilters (up): not loaded (a prompt that uses one is an error)",
        "extensions (1): not run",
        "outputPath: not written; use ctxbench's reports",
        "evaluateOptions (maxConcurrency, repeat): not applied",
        "config keys promptfoo does not define (cosmetics): ignored",
        "the prompt's config (prompt prompt1): not applied",
        "options.provider (1, defaultTest): not applied",
        (
            "per-test providers (2, defaultTest and test 2): ctxbench runs your"
            " --ctxbench-system or --ctxbench-proxy instead"
        ),
        "options.transform (2, tests 1 and 2): not applied",
        "providerOutput (1, test 1): not used; your system is called instead",
        "options.postprocess (1, test 2): not applied",
    )


def test_note_places_are_listed_up_to_ten(tmp_path: Path) -> None:
    tests = "".join(
        f"  - vars: {{q: '{n}'}}\n    options: {{repeat: 2}}\n" for n in range(12)
    )
    config = write(tmp_path, "c.yaml", "prompts: ['{{q}}']\ntests:\n" + tests)
    assert load(config)[0].notes == (
        (
            "options.repeat (12, tests 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more):"
            " not applied"
        ),
    )


# ---------------------------------------------------------------------------- ids


def test_ids(tmp_path: Path) -> None:
    long = "A very long description " * 5
    config = write(
        tmp_path,
        "c.yaml",
        f"""
        prompts: ["{{{{q}}}}"]
        tests:
          - {{description: "Hello, World!", vars: {{q: a}}}}
          - {{description: "hello world", vars: {{q: b}}}}
          - {{description: "hello world", vars: {{q: c}}}}
          - {{description: "{long}", vars: {{q: d}}}}
          - {{description: "¿?", vars: {{q: e}}}}
          - {{vars: {{q: f}}}}
          - {{description: "6", vars: {{q: [g, h]}}}}
        """,
    )
    ids = [e["id"] for e in load(config)[0].examples]
    assert ids == [
        "hello-world",
        "hello-world-2",
        "hello-world-3",
        "a-very-long-description-a-very-long-description-a-very-long",
        "5",
        "6",
        "6-2-1",
        "6-2-2",
    ]


# ------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "prompts: [a\ntests: x: y\n",
            2,
            (
                "the file is not valid YAML: did not find expected ',' or ']'. Fix the"
                " file."
            ),
        ),
        (
            "42\n",
            None,
            (
                "the file holds the number 42; a promptfoo config is a mapping (prompts:,"
                " providers:, tests:) and a tests file a list of tests."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests: 5\n",
            2,
            (
                "'tests' is the number 5; write a list of tests, or a file such as"
                " file://tests.csv."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: 1}\n  - 7\n",
            4,
            (
                "test 2 of the file is the number 7, not a mapping; a test is a mapping"
                " with vars: and assert:. Fix the test."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: 3\n",
            3,
            (
                "'vars' is the number 3; write a mapping of var names to values (or a vars"
                " file)."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    assert: {type: x}\n",
            4,
            (
                "'assert' is a mapping, not a list; write a list of assertions (- type:"
                " contains ...)."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    assert:\n      - contains\n",
            5,
            (
                "assertion 1 is the text 'contains', not a mapping; write it as a mapping"
                " ({type: contains, value: ...})."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    assert:\n      - value: x\n",
            5,
            (
                "assertion 1 has no type; add one (type: contains, equals, llm-rubric,"
                " ...)."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests: []\n",
            2,
            (
                "the config has no tests. Add tests: (a list of tests, or a file such as"
                " file://tests.csv)."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars:\n      q: a\n      q: b\n",
            5,
            (
                "the key 'q' appears twice in one mapping (first on line 4); remove or"
                " rename one of them."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    asserts: []\n",
            4,
            (
                "the test has the key 'asserts', which promptfoo does not define (did you"
                " mean 'assert'?). Use one of: description, vars, provider, providers,"
                " prompts, providerOutput, assert, assertScoringFunction, options,"
                " threshold, metadata."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - description: nothing\n",
            3,
            (
                "the test has none of assert, vars, options, metadata, provider,"
                " providerOutput or threshold, so there is nothing to run (promptfoo"
                " refuses it too). Add vars: or assert:."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    threshold: high\n",
            4,
            "'threshold' is the text 'high', not a number. Write a number.",
        ),
        (
            "prompts: ['{{q}}']\ntests: file://gen.py:tests\n",
            2,
            (
                "the tests 'file://gen.py:tests' are generated by a script, which ctxbench"
                " does not run. Write the generated tests to a CSV, YAML or JSON file."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests: huggingface://datasets/x\n",
            2,
            (
                "the tests 'huggingface://datasets/x' come from huggingface, which"
                " ctxbench does not read. Download them into a local CSV, YAML or JSON"
                " file."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests: ['file://none/*.csv']\n",
            2,
            "no file matches the tests 'file://none/*.csv'. Check the path.",
        ),
        (
            "prompts:\n  - {label: x}\ntests: [{vars: {q: a}}]\n",
            2,
            (
                "prompt 1 has no 'raw' or 'id' text. Give the prompt text as raw: (or a"
                " file as id: file://prompt.txt)."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: 'package:lib:fn'}\n",
            3,
            (
                "the var 'q' is computed by a package (package:lib:fn), which ctxbench"
                " does not run. Write the value itself."
            ),
        ),
        (
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: file://img.png}\n",
            3,
            (
                "the var 'q' is a .png file (file://img.png); ctxbench reads only text"
                " vars. Give the text instead."
            ),
        ),
        (
            "prompts: ['{{q}}']\ndefaultTest: 3\ntests: [{vars: {q: a}}]\n",
            2,
            (
                "'defaultTest' is the number 3; write a mapping (vars:, assert:, ...) or"
                " file://defaults.yaml."
            ),
        ),
        (
            "prompts: ['{{q}}']\nfoo: 1\n---\nbar: 2\n",
            3,
            (
                "the file is not valid YAML: it holds more than one document (a `---` line"
                " between two). Fix the file."
            ),
        ),
    ],
)
def test_config_errors(
    tmp_path: Path, text: str, line: int | None, message: str
) -> None:
    config = write(tmp_path, "c.yaml", text)
    where = f"{config}:{line}: " if line is not None else f"{config}: "
    assert error(config) == where + message


def test_missing_referenced_files_name_the_file_and_the_reference(
    tmp_path: Path,
) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ['{{q}}']
        tests:
          - vars: {q: a}
          - file://more/tests.csv
        """,
    )
    assert error(config) == (
        f"{config}:4: the tests file {tmp_path / 'more' / 'tests.csv'} does not exist"
        f" (a relative file:// path is read from the directory of the config,"
        f" {tmp_path}). Check the path."
    )
    prompt = write(
        tmp_path, "p.yaml", "prompts:\n  - file://nope.txt\ntests: [{vars: {q: a}}]\n"
    )
    assert error(prompt) == (
        f"{prompt}:2: the prompt file {tmp_path / 'nope.txt'} does not exist (a"
        f" relative file:// path is read from the directory of the config,"
        f" {tmp_path}). Check the path."
    )
    var = write(
        tmp_path,
        "v.yaml",
        "prompts: ['{{q}}']\ntests:\n  - vars: {q: file://none.txt}\n",
    )
    assert error(var) == (
        f"{var}:3: the file {tmp_path / 'none.txt'} of the var 'q' does not exist (a"
        f" relative file:// path is read from the directory of the config,"
        f" {tmp_path}). Check the path."
    )


def test_errors_in_referenced_files_name_that_file(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", "- vars: {q: a}\n- vars: {q: b}\n  assert: nope\n")
    config = write(tmp_path, "c.yaml", "prompts: ['{{q}}']\ntests: file://t.yaml\n")
    assert error(config) == (
        f"{tmp_path / 't.yaml'}:3: 'assert' is the text 'nope', not a list; write a"
        " list of assertions (- type: contains ...)."
    )


def test_json_errors(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.json", '{"prompts": ["x"],\n "tests": [1,]}')
    assert error(bad) == (
        f"{bad}:2: the file is not valid JSON: Expecting value at column 14. Fix the"
        " file."
    )
    twice = write(
        tmp_path, "twice.json", '{"prompts": ["{{q}}"],\n "tests": [],\n "tests": []}'
    )
    assert error(twice) == (
        f"{twice}:3: the key 'tests' appears twice in one object (first on line 2);"
        " remove or rename one of them."
    )


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, "c.toml", "x = 1\n")
    assert error(path) == (
        f"{path}: a promptfoo file must be .yaml, .yml, .json or .csv, and this one"
        " has .toml. Rename or convert it."
    )


# ------------------------------------------------------------------------ PyYAML


def test_yaml_is_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write(tmp_path, "c.yaml", "prompts: ['{{q}}']\ntests: [{vars: {q: a}}]\n")
    plain = write(tmp_path, "data.yaml", "- q: a\n")
    json_config = write(
        tmp_path, "c.json", '{"prompts": ["{{q}}"], "tests": [{"vars": {"q": "a"}}]}'
    )
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` fails
    expected = "needs PyYAML: pip install 'pytest-context-bench[yaml]'"
    assert error(config) == f"reading {config} {expected}"
    with pytest.raises(DatasetError) as info:
        read_yaml_examples(str(plain))
    assert str(info.value) == f"reading {plain} {expected}"
    assert info.value.path == str(plain)
    with pytest.raises(DatasetError, match="^reading a YAML file needs PyYAML"):
        needs_yaml()
    # JSON needs no PyYAML; a YAML config is still recognised by its keys.
    assert load(json_config)[0].examples[0]["prompt"] == "a"
    assert looks_like_promptfoo(str(config))
    assert not looks_like_promptfoo(str(plain))


def test_pure_python_yaml_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{q}}"]
        tests:
          - vars: {q: a}

          - vars:
              q: b
        """,
    )
    fast = load(config)
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    promptfoo._loader_class.cache_clear()
    try:
        slow = load(config)
    finally:
        promptfoo._loader_class.cache_clear()
    assert slow == fast
    assert slow[0].lines == (3, 5)


def test_yaml_is_read_with_yaml_1_2_core_rules(tmp_path: Path) -> None:
    # js-yaml (promptfoo's reader) uses the YAML 1.2 core schema.
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{q}}"]
        tests:
          - vars:
              q: x
              answer: yes
              off: no
              octal: 012
              hex: 0x1F
              oct: 0o17
              date: 2024-01-02
              f: 1e3
              inf: .inf
              bools: [true, False]
              nothing: ~
              anchor: &a {k: v}
              merged: {<<: *a, k2: v2}
        """,
    )
    example = load(config)[0].examples[0]
    assert {k: v for k, v in example.items() if k not in ("id", "prompt", "q")} == {
        "answer": "yes",
        "off": "no",
        "octal": 12,
        "hex": 31,
        "oct": 15,
        "date": "2024-01-02",
        "f": 1000.0,
        "inf": float("inf"),
        "bools": [True, False],
        "nothing": None,
        "anchor": {"k": "v"},
        "merged": {"k": "v", "k2": "v2"},
    }


# ------------------------------------------------------------- read_yaml_examples


def test_read_yaml_examples(tmp_path: Path) -> None:
    listed = write(
        tmp_path,
        "a.yaml",
        """
        # a comment
        - question: What is 2+2?
          answer: "4"
        - {question: Capital of France?, answer: Paris}

        - question: |
            multi
            line
          answer: yes
        """,
    )
    examples, lines = read_yaml_examples(str(listed))
    assert examples == [
        {"question": "What is 2+2?", "answer": "4"},
        {"question": "Capital of France?", "answer": "Paris"},
        {"question": "multi\nline\n", "answer": "yes"},
    ]
    assert lines == [2, 4, 6]
    wrapped = write(tmp_path, "b.yml", "name: qa\nexamples:\n  - {q: a}\n  - q: b\n")
    assert read_yaml_examples(str(wrapped)) == ([{"q": "a"}, {"q": "b"}], [3, 4])


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "- q: [a\n- q: b\n",
            2,
            "the file is not valid YAML: did not find expected ',' or ']'. Fix the file.",
        ),
        (
            "q: a\n",
            1,
            (
                "the top-level mapping has no 'examples' field; a YAML dataset is a list"
                " of example mappings, or a mapping whose 'examples' field is that list."
                " Fix the file."
            ),
        ),
        (
            "examples: 3\n",
            1,
            (
                "the 'examples' field holds the number 3, not a list; a YAML dataset is a"
                " list of example mappings, or a mapping whose 'examples' field is that"
                " list. Fix the file."
            ),
        ),
        (
            "- q: a\n- just text\n",
            2,
            (
                "example 2 is the text 'just text', not a mapping; a YAML dataset is a"
                " list of example mappings, or a mapping whose 'examples' field is that"
                " list. Fix the example."
            ),
        ),
        ("- q: a\n- 1: b\n", 2, 'the key 1 is not a string; quote it ("1": ...).'),
        ("- q: a\n  [x]: b\n", 2, "a key is a list or a mapping; write a string key."),
        (
            "- q: a\n  q: b\n",
            2,
            (
                "the key 'q' appears twice in one mapping (first on line 1); remove or"
                " rename one of them."
            ),
        ),
        ("[]\n", None, "the list of examples is empty. Add at least one example."),
        (
            "# nothing\n",
            None,
            (
                "the file is empty; a YAML dataset is a list of example mappings, or a"
                " mapping whose 'examples' field is that list. Add examples."
            ),
        ),
        (
            "just text\n",
            None,
            (
                "the file holds the text 'just text'; a YAML dataset is a list of example"
                " mappings, or a mapping whose 'examples' field is that list. Fix the"
                " file."
            ),
        ),
    ],
)
def test_read_yaml_examples_errors(
    tmp_path: Path, text: str, line: int | None, message: str
) -> None:
    path = write(tmp_path, "d.yaml", text)
    with pytest.raises(DatasetError) as info:
        read_yaml_examples(str(path))
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert str(info.value) == where + message
    assert (info.value.path, info.value.line) == (str(path), line)


def test_read_yaml_examples_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "none.yaml"
    with pytest.raises(DatasetError) as info:
        read_yaml_examples(str(missing))
    assert str(info.value) == f"{missing}: the file does not exist. Check the path."


# --------------------------------------------------------------------- sniffing


def test_looks_like_promptfoo(tmp_path: Path) -> None:
    cases = {
        "config.yaml": "description: x\nprompts: ['{{q}}']\n",
        "tests_only.yml": "tests: file://t.csv\n",
        "list.yaml": "- vars: {q: a}\n- description: b\n  assert: []\n",
        "config.json": '{"prompts": ["x"]}',
        "list.json": '[{"vars": {"q": "a"}, "threshold": 0.5}]',
        "expected.csv": "q,__expected\na,b\n",
        "meta.csv": "\ufeffq , __metadata:kind\na,b\n",
        "desc.csv": "q,__description\na,b\n",
    }
    others = {
        "plain.yaml": "- question: a\n  answer: b\n",
        "other_keys.yaml": "- vars: {q: a}\n  answer: b\n",
        "no_vars.yaml": "- description: a\n",
        "mapping.yaml": "examples: []\n",
        "plain.json": '[{"question": "a"}]',
        "empty.json": "[]",
        "plain.csv": "question,answer\na,b\n",
        "underscore.csv": "q,_expected\na,b\n",
        "broken.yaml": "prompts: [\n",
        "broken.json": "{",
        "binary.yaml": "\x00\x01\x02",
        "notes.txt": "prompts: x\n",
        "scalar.yaml": "42\n",
    }
    for name, text in {**cases, **others}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert [n for n in cases if not looks_like_promptfoo(str(tmp_path / n))] == []
    assert [n for n in others if looks_like_promptfoo(str(tmp_path / n))] == []
    assert not looks_like_promptfoo(str(tmp_path / "missing.yaml"))
    (tmp_path / "dir.yaml").mkdir()
    assert not looks_like_promptfoo(str(tmp_path / "dir.yaml"))
    assert not looks_like_promptfoo(tmp_path / "config.yaml") is False  # PathLike too


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_looks_like_promptfoo_does_not_open_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    assert not looks_like_promptfoo(str(fifo))  # would block if it were opened


def test_looks_like_promptfoo_reads_only_the_start_of_a_big_file(
    tmp_path: Path,
) -> None:
    items = "".join(
        f"- vars:\n    q: '{'x' * 200} {n}'\n  assert:\n    - type: contains\n"
        "      value: x\n"
        for n in range(3000)
    )
    big = tmp_path / "big.yaml"
    big.write_text(items, encoding="utf-8")
    assert big.stat().st_size > 512 * 1024
    assert looks_like_promptfoo(str(big))
    config = tmp_path / "big_config.yaml"
    config.write_text("prompts: ['{{q}}']\ntests:\n" + textwrap.indent(items, "  "))
    assert looks_like_promptfoo(str(config))
    csv_big = tmp_path / "big.csv"
    csv_big.write_text("q,__expected\n" + "a,b\n" * 200_000)
    assert looks_like_promptfoo(str(csv_big))


def test_suites_are_plain_data(tmp_path: Path) -> None:
    config = write(tmp_path, "c.yaml", "prompts: ['{{q}}']\ntests: [{vars: {q: a}}]\n")
    (suite,) = load(config)
    # What a worker would send: builtins only.
    assert json.loads(json.dumps(suite.examples)) == list(suite.examples)
    with pytest.raises(AttributeError):
        suite.tag = "other"  # type: ignore[misc]


# ------------------------------------------------------------------- more shapes


def test_more_prompt_and_test_shapes(tmp_path: Path) -> None:
    write(tmp_path, "prompts.csv", 'prompt,label\n"Hi {{q}}",hi\n"Bye {{q}}",\n')
    write(tmp_path, "lines.jsonl", '[{"role": "user", "content": "{{q}}"}]\n')
    write(tmp_path, "t.csv", "q\nfrom csv\n")
    write(tmp_path, "expected.json", '["a", "b"]')
    config = write(
        tmp_path,
        "c.yaml",
        """
        env: {GREETING: Hello}
        prompts:
          - file://prompts.csv
          - file://lines.jsonl
          - "{{ env.GREETING }} {{q}}"
          - nothing/*.txt
        tests:
          path: file://t.csv
        """,
    )
    suites = load(config)
    # promptfoo's CSV prompts file: a `prompt` column (and `label`); a .jsonl file
    # holds one prompt per line; a glob that matches no file is the prompt's text;
    # `env` is the config's env: over the process environment.
    assert [(s.prompt_label, s.examples[0]["prompt"]) for s in suites] == [
        ("prompt1", "Hi from csv"),
        ("prompt2", "Bye from csv"),
        ("prompt3", [{"role": "user", "content": "from csv"}]),
        ("prompt4", "Hello from csv"),
        ("prompt5", "nothing/*.txt"),
    ]
    assert suites[0].examples[0]["id"] == "row-1"

    single = write(
        tmp_path,
        "one_test.yaml",
        """
        description: lone test
        vars: {q: x}
        assert:
          - type: contains-any
            value: file://expected.json
        """,
    )
    (suite,) = load(single)
    assert suite.examples == (
        {
            "id": "lone-test",
            "description": "lone test",
            "q": "x",
            "assert": [{"type": "contains-any", "value": ["a", "b"]}],
        },
    )


def test_a_prefix_that_breaks_the_template_names_the_test(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "c.yaml",
        """
        prompts: ["{{q}}"]
        tests:
          - vars: {q: a}
          - vars: {q: b}
            options: {prefix: "{% raw %}"}
        """,
    )
    assert error(config) == (
        f"{config}:4: the prompt of test 2 cannot be rendered: it uses a {{% ... tag"
        " (with its options.prefix / options.suffix); ctxbench renders only {{var}}"
        " substitution. Rewrite it."
    )


@pytest.mark.parametrize(
    ("files", "text", "where", "message"),
    [
        (
            {"vars.yaml": "- a\n"},
            "prompts: ['{{q}}']\ntests:\n  - vars: file://vars.yaml\n",
            "vars.yaml",
            (
                "the vars file holds a list; it must hold a mapping of var names to"
                " values."
            ),
        ),
        (
            {},
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    metadata: [x]\n",
            "c.yaml:4",
            "'metadata' is a list, not a mapping. Fix it.",
        ),
        (
            {},
            "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    options: 1\n",
            "c.yaml:4",
            "'options' is the number 1, not a mapping. Fix it.",
        ),
        (
            {},
            (
                "prompts: ['{{metadata}}']\ntests:\n  - vars: {metadata: a}\n"
                "    metadata: {k: v}\n"
            ),
            "c.yaml:3",
            (
                "the test has metadata and a var named 'metadata'; both would be the"
                " example's 'metadata' field. Rename the var."
            ),
        ),
        (
            {},
            "prompts: [langfuse://my-prompt]\ntests: [{vars: {q: a}}]\n",
            "c.yaml:1",
            (
                "the prompt 'langfuse://my-prompt' comes from langfuse, which ctxbench"
                " does not read. Write the prompt as text or a local file."
            ),
        ),
        (
            {"x.txt": "a"},
            (
                "prompts: ['{{q}}']\ntests:\n  - vars: {q: a}\n    assert:\n"
                "      - {type: equals, value: file://x.html}\n"
            ),
            "c.yaml:5",
            (
                "the assertion value 'file://x.html' is a .html file; an assertion value"
                " file must be .txt, .json, .yaml or .yml."
            ),
        ),
        (
            {"empty.yaml": ""},
            "prompts: ['{{q}}']\ntests: file://empty.yaml\n",
            "empty.yaml",
            "the file holds no tests. Add at least one test.",
        ),
    ],
)
def test_more_errors(
    tmp_path: Path, files: dict[str, str], text: str, where: str, message: str
) -> None:
    for name, content in files.items():
        write(tmp_path, name, content)
    config = write(tmp_path, "c.yaml", text)
    assert error(config) == f"{tmp_path / where}: {message}"


# --- added with the plugin's integration --------------------------------------


def test_yaml_aliases_that_expand_without_end_are_refused(tmp_path: Path) -> None:
    """A "billion laughs" YAML (nine levels of nine aliases) is one line, not a
    hang, whether read as a dataset or as a promptfoo config."""
    levels = ['  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 9):
        levels.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    text = "- id: a\n  question: q\n  answer: x\n" + "\n".join(levels) + "\n"
    path = tmp_path / "laughs.yaml"
    path.write_text(text)
    from pytest_context_bench.datasets import load_local

    with pytest.raises(DatasetError, match=r"aliases \(\*name\) expand to more than 1,000,000"):
        load_local(path)
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: ['{{q}}']\ntests:\n  - vars:\n" + "\n".join("  " + ln for ln in levels).replace("  l0", "      l0", 1) + "\n")
    with pytest.raises(DatasetError):
        load_promptfoo(str(config))
    # a cycle is refused too; a few shared defaults are fine
    (tmp_path / "cycle.yaml").write_text("- &a {id: a, question: q, answer: x, self: *a}\n")
    with pytest.raises(DatasetError, match="aliases"):
        load_local(tmp_path / "cycle.yaml")
    (tmp_path / "shared.yaml").write_text(
        "- {id: a, question: q, answer: x, tags: &t [x, y]}\n- {id: b, question: q, answer: y, tags: *t}\n")
    assert load_local(tmp_path / "shared.yaml")[1]["tags"] == ["x", "y"]


def test_a_yaml_dataset_with_assertions(tmp_path: Path) -> None:
    from pytest_context_bench.datasets import load_local

    path = tmp_path / "checks.yaml"
    path.write_text(
        "- id: a\n  question: Say hi\n  assert:\n    - type: icontains\n      value: hi\n"
        "      metric: greet\n"
        "- id: b\n  question: JSON please\n  assert:\n    - type: is-json\n"
        "      value:\n        type: object\n        requird: [a]\n"
    )
    with pytest.raises(DatasetError, match=r"checks.yaml:7: example 2: assertion 1 \(is-json\): invalid JSON Schema: unknown keyword 'requird'"):
        load_local(path)
    path.write_text(path.read_text().replace("requird", "required"))
    ds = load_local(path)
    assert ds.assertion_metrics == frozenset({"greet"})
    assert ds[1]["assert"][0]["value"] == {"type": "object", "required": ["a"]}
