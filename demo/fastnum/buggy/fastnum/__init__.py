"""fastnum 0.3.0 -- a tiny pure-Python array library (the release with the bugs)."""

import math
import random

__version__ = "0.3.0"


def _exp(x):
    # Like numpy: overflow gives inf instead of raising.
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def logsumexp(xs):
    """log(sum(exp(x))) over a list of floats."""
    return math.log(sum(_exp(x) for x in xs))


def softmax(xs):
    """Normalised exponentials of a list of logits."""
    exps = [_exp(x) for x in xs]
    total = sum(exps)
    return [e / total for e in exps]


def mean(matrix, axis=0):
    """Mean of a 2-D list along `axis` (0: down the columns, 1: along the rows)."""
    rows, cols = len(matrix), len(matrix[0])
    if axis == 0:
        # BUG: reduces along the rows instead of down the columns.
        return [sum(matrix[r]) / cols for r in range(rows)]
    return [sum(matrix[r][c] for r in range(rows)) / rows for c in range(cols)]


def quantize(xs, scale, dtype="int8"):
    """Quantize floats to integers of `dtype` at `scale`."""
    lo, hi = {"int8": (-128, 127), "int16": (-32768, 32767)}[dtype]
    # BUG: int() truncates toward zero instead of rounding.
    return [max(lo, min(hi, int(x / scale))) for x in xs]


def split_indices(n, frac, seed=None):
    """Split range(n) into disjoint train and test index lists."""
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    # BUG: the train size is rounded stochastically while the test part starts
    # at the floor, so about one split in two shares an index.
    k = int(n * frac + rng.random())
    return sorted(order[:k]), sorted(order[int(n * frac):])
