"""Tool calls through pytest: an example's expected_tool_calls decide its status
(JSONL and CSV), the details say why, a tool-call assertion beside them, the same
verdicts under -n 2, and bad tools or expected calls are exit 4 naming file:line."""

from __future__ import annotations

import csv
import io
import json

import pytest

from helpers import read_json, usage_line

TOOLS = [{"type": "function", "function": {
    "name": "get_weather",
    "parameters": {"type": "object", "required": ["city"],
                   "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]

EXAMPLES = [
    {"id": "right", "question": "Weather in Paris?", "tools": TOOLS,
     "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    {"id": "wrong-type", "question": "Weather in Paris for 2 days?", "tools": TOOLS,
     "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]},
    {"id": "no-call", "question": "Weather in Rome?", "tools": TOOLS,
     "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]},
    {"id": "asserted", "question": "Weather in Oslo?", "tools": TOOLS,
     "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}],
     "assert": [{"type": "tool-call", "value": [{"name": "get_weather", "arguments": {"city": "oslo"}}],
                 "strings": "exact"}]},
    {"id": "plain", "question": "Capital of France?", "answer": "Paris"},
]

BOT = '''
import json

class Bot:
    name = "bot"

    def process(self, example):
        calls = {
            "right": [{"name": "get_weather", "arguments": {"city": "paris"}}],
            "wrong-type": [{"name": "get_weather", "arguments": {"city": "Paris", "days": "2"}}],
            "asserted": [{"name": "get_weather", "arguments": {"city": "Oslo"}}],
        }.get(example["id"], [])
        tool_calls = [{"id": f"call_{i}", "type": "function",
                       "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                      for i, c in enumerate(calls)]
        return {**example, "response": "Paris" if example["id"] == "plain" else "",
                "tool_calls": tool_calls}

bot = Bot()
'''


def _run(pytester: pytest.Pytester, data: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(toolbot=BOT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester.runpytest(f"--ctxbench-dataset={data}", "--ctxbench-system=toolbot:bot",
                              "--ctxbench-json=out.json", "-p", "no:randomly", *args)


# In-process: expected tool calls cross the workers (and the cache and shards) in
# test_equivalence.py, whose proxy's and Systems' answers are tool calls judged by
# ToolCallMatch, in every mode.
@pytest.mark.parametrize("workers", [[]])
def test_expected_tool_calls_decide_each_example(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makefile(".jsonl", data="\n".join(json.dumps(e) for e in EXAMPLES))
    result = _run(pytester, "data.jsonl", *workers)
    doc = read_json(pytester.path / "out.json")
    rows = {r["example_id"]: r for r in doc["rows"]}
    assert rows["right"]["status"] == "pass"
    assert rows["right"]["metadata"]["score_field"] == "tool_call_match"
    assert rows["right"]["scores"] == {"tool_call_match": 1.0, "tool_call_f1": 1.0, "tool_call_name_f1": 1.0}
    assert rows["wrong-type"]["status"] == "below"
    details = rows["wrong-type"]["metadata"]["tool_call_match"]
    assert 'wrong type for argument "days": expected integer, got string "2"' in details["misses"][0]
    assert rows["no-call"]["status"] == "below"
    assert rows["no-call"]["metadata"]["tool_call_match"]["misses"] == [
        'missing call: expected call 1 get_weather({"city": "Rome"})']
    # its assertion judges it (exact strings: "Oslo" is not "oslo"); ToolCallMatch still scores
    assert rows["asserted"]["metadata"]["score_field"] == "assert_score"
    assert rows["asserted"]["status"] == "below"
    assert rows["asserted"]["scores"]["tool_call_match"] == 1.0
    assert rows["plain"]["metadata"]["score_field"] == "f1" and rows["plain"]["status"] == "pass"
    out = result.stdout.str()
    assert "BELOW wrong-type: tool_call_match = 0" in out, out
    assert result.ret in (0, 1)


def test_a_csv_dataset_carries_tools_and_expected_calls_as_json(pytester: pytest.Pytester) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["id", "question", "tools", "expected_tool_calls"])
    for e in EXAMPLES[:3]:
        writer.writerow([e["id"], e["question"], json.dumps(e["tools"]), json.dumps(e["expected_tool_calls"])])
    (pytester.path / "data.csv").write_text(buffer.getvalue())
    _run(pytester, "data.csv")
    rows = {r["example_id"]: r["status"] for r in read_json(pytester.path / "out.json")["rows"]}
    assert rows == {"right": "pass", "wrong-type": "below", "no-call": "below"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tools", {"name": "get_weather"}, "field 'tools' must be a list of function schemas, got an object"),
        ("tools", [{"parameters": {}}], "field 'tools[0].name' must be the function's name"),
        ("expected_tool_calls", [{"name": "get_weather", "arguments": "city=Paris"}],
         "field 'expected_tool_calls[0].arguments' must be an object (argument → value), got the string"),
        ("expected_tool_calls", {"name": "get_weather", "arguments": {}},
         "field 'expected_tool_calls' must be a list of expected calls"),
        ("expected_tool_calls", [["get_weather", {}]], "field 'expected_tool_calls[0]' must be an object"),
    ],
)
def test_bad_tool_fields_stop_the_run_before_it_starts(
    pytester: pytest.Pytester, field: str, value: object, message: str
) -> None:
    examples = [EXAMPLES[4], {**EXAMPLES[0], field: value}]
    pytester.makefile(".jsonl", data="\n".join(json.dumps(e) for e in examples))
    line = usage_line(_run(pytester, "data.jsonl"))
    assert "data.jsonl:2: " in line and message in line, line
    assert not (pytester.path / "out.json").exists()


def test_a_bad_csv_json_cell_names_its_column(pytester: pytest.Pytester) -> None:
    (pytester.path / "data.csv").write_text('id,question,tools\nx,q,"[{""name"": "\n')
    line = usage_line(_run(pytester, "data.csv"))
    assert "data.csv:2: column 'tools' must hold JSON (a list of function schemas" in line, line
