"""Planning a local model's forward passes: a token budget per pass, and prefixes shared by prompts.

A forward pass over a padded batch holds (and, for attention and the MLPs, computes) about
rows × padded length tokens, so batches are cut by a budget on that product rather than by a count
of requests: many short prompts go together, long ones in small batches, and the memory a pass
needs is bounded by the budget whatever the prompts. Requests are taken longest first, so each
batch pads little. A single request longer than the budget is a batch of one (it cannot be cut).

Judging prompts repeat long prefixes: the two presentation orders of a pair share the system
prompt, the template's head and the question, and in a round robin every pair whose first answer
is the same model's shares that answer too. ``prefix_groups`` sorts the prompts' token ids and
groups neighbours whose common prefix is worth computing once (its keys and values are then
reused for every member, see ``local_backend``).
"""

from __future__ import annotations

from collections.abc import Sequence


def padded_tokens(rows: int, longest: int, extra: int = 0) -> int:
    """Tokens a pass of ``rows`` requests padded to ``longest`` holds, plus ``extra`` per row
    (a shared prefix in the cache, or the new tokens a generation adds)."""
    return rows * (longest + extra)


def budget_batches(lengths: Sequence[int], budget: int, *, extra: int = 0) -> list[list[int]]:
    """Indices of ``lengths`` cut into batches, longest first, each holding at most ``budget``
    padded tokens (``padded_tokens``); a request over the budget on its own is a batch of one."""
    if budget < 1:
        raise ValueError("the token budget must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and padded_tokens(len(cur) + 1, lengths[cur[0]], extra) > budget:
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_groups(ids: Sequence[Sequence[int]], *, min_prefix: int = 16) -> list[tuple[int, list[int]]]:
    """Groups ``(prefix length, member indices)`` covering every index of ``ids`` once.

    The sequences are sorted, and a neighbour joins the current group when that lowers the tokens
    to compute: a group of n with common prefix p costs p + Σ(len − p), so joining one that shares
    only p' < p with the group pays when n·p' > (n − 1)·p, and a prefix under ``min_prefix`` tokens
    is not shared at all. Every member keeps at least one token of its own after the prefix (the
    logits are read there). A group of one has prefix length 0.
    """
    order = sorted(range(len(ids)), key=lambda i: (list(ids[i]), i))
    groups: list[tuple[int, list[int]]] = []
    cur: list[int] = []
    p = 0
    for i in order:
        if cur:
            shared = min(p if len(cur) > 1 else len(ids[cur[0]]) - 1, common_prefix(ids[cur[-1]], ids[i]))
            shared = min(shared, len(ids[i]) - 1)
            n = len(cur)
            if shared >= min_prefix and (n == 1 or n * shared > (n - 1) * p):
                cur.append(i)
                p = shared
                continue
            groups.append((p if len(cur) > 1 else 0, cur))
        cur, p = [i], 0
    if cur:
        groups.append((p if len(cur) > 1 else 0, cur))
    return groups
