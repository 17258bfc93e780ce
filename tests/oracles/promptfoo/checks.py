"""Python assertion functions used by the promptfoo conformance cases.

promptfoo calls each function as ``fn(output, context)`` where ``output`` is
the model output and ``context`` is a JSON-decoded dict (see README.md).
Only the standard library is used so any python3 works.
"""

import json


def get_assert(output, context):
    """Default entry point used when a file:// reference names no function."""
    return "world" in output


def returns_true(output, context):
    return True


def returns_false(output, context):
    return False


def has_hello(output, context):
    return output.startswith("Hello")


def returns_float(output, context):
    return 0.75


def returns_zero(output, context):
    return 0.0


def returns_int_one(output, context):
    return 1


def length_ratio(output, context):
    """Fraction of 20 characters used, capped at 1.0."""
    return min(len(output) / 20.0, 1.0)


def returns_dict_pass(output, context):
    return {"pass": True, "score": 0.9, "reason": "looks good"}


def returns_dict_fail(output, context):
    return {"pass": False, "score": 0.2, "reason": "too short"}


def returns_dict_low_score_pass(output, context):
    return {"pass": True, "score": 0.4, "reason": "borderline"}


def returns_dict_snake_pass(output, context):
    return {"pass_": True, "score": 1.0, "reason": "snake case key"}


def returns_dict_missing_reason(output, context):
    return {"pass": True, "score": 1.0}


def returns_dict_named_scores(output, context):
    return {
        "pass": True,
        "score": 0.5,
        "reason": "with named scores",
        "named_scores": {"fluency": 0.25},
    }


def raises_error(output, context):
    raise ValueError("boom from checks.py")


def returns_none(output, context):
    return None


def returns_string_true(output, context):
    return "true"


def returns_string_number(output, context):
    return "0.5"


def returns_list(output, context):
    return [1, 2, 3]


async def async_true(output, context):
    return True


def uses_vars(output, context):
    expected = context["vars"]["expected"]
    return {
        "pass": expected in output,
        "score": 1.0 if expected in output else 0.0,
        "reason": "found " + expected if expected in output else "missing " + expected,
    }


def context_shape(output, context):
    """Report the shape of the context object promptfoo passes in."""
    shape = {
        "context_keys": sorted(context.keys()),
        "test_keys": sorted((context.get("test") or {}).keys()),
        "provider_response_keys": sorted((context.get("providerResponse") or {}).keys()),
        "vars": context.get("vars"),
        "output_type": type(output).__name__,
    }
    return {"pass": True, "score": 1.0, "reason": json.dumps(shape, sort_keys=True)}
