"""fastnum 0.3.1 -- a tiny pure-Python array library (the release with the fixes)."""

import math
import random

__version__ = "0.3.1"


def _exp(x):
    # Like numpy: overflow gives inf instead of raising.
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def logsumexp(xs):
    """log(sum(exp(x))) over a list of floats, stable for large inputs."""
    m = max(xs)
    if math.isinf(m):
        return m
    return m + math.log(sum(_exp(x - m) for x in xs))


def softmax(xs):
    """Normalised exponentials of a list of logits, stable for large inputs."""
    m = max(xs)
    exps = [_exp(x - m) for x in xs]
    total = sum(exps)
    return [e / total for e in exps]


def mean(matrix, axis=0):
    """Mean of a 2-D list along `axis` (0: down the columns, 1: along the rows)."""
    rows, cols = len(matrix), len(matrix[0])
    if axis == 0:
        return [sum(matrix[r][c] for r in range(rows)) / rows for c in range(cols)]
    return [sum(matrix[r]) / cols for r in range(rows)]


def quantize(xs, scale, dtype="int8"):
    """Quantize floats to integers of `dtype` at `scale`, rounding to nearest."""
    lo, hi = {"int8": (-128, 127), "int16": (-32768, 32767)}[dtype]
    return [max(lo, min(hi, round(x / scale))) for x in xs]


def split_indices(n, frac, seed=None):
    """Split range(n) into disjoint train and test index lists."""
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    k = int(n * frac)
    return sorted(order[:k]), sorted(order[k:])
