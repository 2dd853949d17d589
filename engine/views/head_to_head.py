"""The head-to-head browser's queries: two models, every prompt where they met, each judge's verdicts
on that pair in each presentation order with their rationales, and the answers side by side.

Words used here and on the page:

* a *prompt* is one prompt instance (prompt id, variant, turn); two models *met* on it when some
  verdict of the selection compares them there;
* a *meeting* is one judge's verdicts on the pair for one prompt: one edge of one tournament graph;
* a meeting's *outcome*, from model A's side: ``a_wins``, ``b_wins``, ``tie``,
  ``inconsistent`` (the judge saw both orders and the orders disagree: the plurality of the verdicts
  with A shown first differs from the plurality with B shown first) or ``invalid`` (no valid verdict).
  Otherwise it is the plurality of the meeting's valid verdicts, and no single most frequent result is
  a tie: the rule the graphs combine a pair's verdicts by (``engine.graphs.stack``'s plurality policy);
  a verdict without a recorded order counts only in that plurality.

Everything is SQL over the dataset's verdict relation (the verdicts table, or Parquet files read in
place: ``engine.ranking.vote_query.store_relation``), the prompts and the answers tables: the counts
are aggregates and a page reads only its own prompts, so two models that met 30,000 times in a
million-verdict battle log cost one grouped scan and one page, never the whole log in memory.
The win rate is the leaderboard's (``engine.ranking.count_board``): (wins + ties / 2) over A's valid
verdicts against B.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pandas as pd

from engine.errors import LensError
from engine.store.sql import Relation, in_values, params

if TYPE_CHECKING:
    from engine.store.connection import Store

OUTCOMES: tuple[str, ...] = ("a_wins", "b_wins", "tie", "inconsistent", "invalid")
"""A meeting's outcome codes, from model A's side (see the module docstring)."""

PAGE_SIZE = 5
"""Prompts per page of the browser: each shows its question, two answers and one expander per judge's
meeting. Five, not ten: a page's long texts are most of what a new tab draws (issue 26: <= 1.5 s)."""


def outcome_label(code: str, model_a: str, model_b: str) -> str:
    """An outcome code in words."""
    return {
        "a_wins": f"{model_a} wins",
        "b_wins": f"{model_b} wins",
        "tie": "tie",
        "inconsistent": "orders disagree",
        "invalid": "no valid verdict",
    }.get(code, code)


@dataclass(frozen=True)
class Matchup:
    """Two models of one dataset under the selection's judge and category filters (None: all)."""

    dataset: str
    model_a: str
    model_b: str
    judge: str | None = None
    category: str | None = None


@dataclass(frozen=True)
class Summary:
    """The counts on top of the browser.

    ``verdicts``: A's valid verdicts against B by result (``a_wins``, ``b_wins``, ``tie``) and the
    invalid ones (``invalid``); ``meetings``: meetings by outcome code (every code of ``OUTCOMES``,
    zeros included); ``prompts``: prompt graphs where the two met, one per (prompt id, variant, turn), the
    browser's entries; ``prompt_ids``: the prompt ids among them (fewer where a prompt has variants or
    turns: 19 prompt ids held 114 graphs on a 3-variant, 2-turn set, audit38); ``win_rate``: A's (wins +
    ties / 2) / valid verdicts, None without any valid verdict."""

    verdicts: dict[str, int]
    meetings: dict[str, int]
    prompts: int
    prompt_ids: int

    @property
    def n_meetings(self) -> int:
        return sum(self.meetings.values())

    @property
    def n_valid(self) -> int:
        return self.verdicts["a_wins"] + self.verdicts["b_wins"] + self.verdicts["tie"]

    @property
    def win_rate(self) -> float | None:
        if self.n_valid == 0:
            return None
        return (self.verdicts["a_wins"] + 0.5 * self.verdicts["tie"]) / self.n_valid


@dataclass(frozen=True)
class VerdictShown:
    """One verdict of a meeting: which model was shown first (None: not recorded), the result from A's
    side (``a_wins``, ``b_wins``, ``tie`` or ``invalid``), the rationale and the annotator when stored."""

    first: str | None
    result: str
    rationale: str | None
    annotator: str | None


@dataclass(frozen=True)
class Meeting:
    """One judge's verdicts on the pair for one prompt, with the outcome in each order (None where the
    judge did not see that order or gave no valid verdict in it)."""

    judge: str
    outcome: str
    when_a_first: str | None
    when_b_first: str | None
    verdicts: tuple[VerdictShown, ...]


@dataclass(frozen=True)
class PromptMeetings:
    """One prompt of a page: its question and the two answers (None when the store holds no text) and
    the meetings on it that pass the filters, by judge. ``context``: for a later turn, each earlier turn's
    (question, answer of A, answer of B), the conversation its answers build on (a judge of the turn is
    shown it: ``engine.judging.pipeline.conversation``)."""

    prompt_id: str
    variant: int
    turn: int
    category: str | None
    question: str | None
    answer_a: str | None
    answer_b: str | None
    meetings: tuple[Meeting, ...]
    context: tuple[tuple[str | None, str | None, str | None], ...] = ()


def _plurality(x: str, y: str, t: str) -> str:
    """SQL: the plurality of three counts as an outcome code ('a_wins', 'b_wins', 'tie'); NULL when all are 0;
    no single largest count is a tie."""
    return (f"CASE WHEN {x} + {y} + {t} = 0 THEN NULL WHEN {x} > greatest({y}, {t}) THEN 'a_wins' "
            f"WHEN {y} > greatest({x}, {t}) THEN 'b_wins' ELSE 'tie' END")


def _check(m: Matchup) -> None:
    if m.model_a == m.model_b:
        raise LensError(f"Head-to-head needs two different models; both are {m.model_a!r}.")


def _pair_rows(store: Store, m: Matchup) -> Relation:
    """The selection's verdicts on the pair, one row each, with ``res`` (the result from A's side:
    'a_wins', 'b_wins', 'tie', NULL for an invalid verdict) and ``a_first`` (whether A was shown first;
    NULL when the order is not recorded)."""
    from engine.ranking.vote_query import store_relation

    _check(m)
    src = store_relation(store, m.dataset)
    a = Relation.bind("{a}", a=m.model_a)
    b = Relation.bind("{b}", b=m.model_b)
    conditions = [(f"((model_a = {a} AND model_b = {b}) OR (model_a = {b} AND model_b = {a}))",
                   a.values + b.values)]
    conditions += [in_values(col, [val]) for col, val in (("judge", m.judge), ("category", m.category))
                   if val is not None]
    rows = src.filtered(conditions)
    sql = (
        f"(SELECT *, CASE WHEN winner = 'tie' THEN 'tie' WHEN winner NOT IN ('A', 'B') THEN NULL "
        f"WHEN (winner = 'A') = (model_a = {a}) THEN 'a_wins' ELSE 'b_wins' END AS res, "
        f"CASE \"order\" WHEN 'AB' THEN model_a = {a} WHEN 'BA' THEN model_b = {a} END AS a_first "
        f"FROM {rows})"
    )
    return Relation(sql, rows.values)


def _meetings(rows: Relation) -> Relation:
    """One row per meeting (judge, prompt_id, variant, turn) with its category, verdict counts, the
    outcome with A shown first and with B shown first, and the outcome."""
    counts = ", ".join(
        f"count(*) FILTER (WHERE res = '{r}'{cond}) AS {r}{suffix}"
        for suffix, cond in (("", ""), ("_af", " AND a_first"), ("_bf", " AND NOT a_first"))
        for r in ("a_wins", "b_wins", "tie")
    )
    sql = f"""(
        SELECT *, CASE WHEN n_valid = 0 THEN 'invalid'
                       WHEN when_a_first <> when_b_first THEN 'inconsistent'
                       ELSE {_plurality('a_wins', 'b_wins', 'tie')} END AS outcome
        FROM (SELECT *, {_plurality('a_wins_af', 'b_wins_af', 'tie_af')} AS when_a_first,
                        {_plurality('a_wins_bf', 'b_wins_bf', 'tie_bf')} AS when_b_first
              FROM (SELECT judge, prompt_id, variant, turn, min(category) AS category,
                           count(*) AS n_verdicts, count(res) AS n_valid, {counts}
                    FROM {rows} GROUP BY judge, prompt_id, variant, turn)))"""
    return Relation(sql, rows.values)


def summary(store: Store, m: Matchup) -> Summary:
    """The counts on top of the browser (see ``Summary``), over every meeting of the selection."""
    rows = _pair_rows(store, m)
    con = store.cursor()
    v = con.execute(
        f"SELECT count(*) FILTER (WHERE res = 'a_wins'), count(*) FILTER (WHERE res = 'b_wins'), "
        f"count(*) FILTER (WHERE res = 'tie'), count(*) FILTER (WHERE res IS NULL) FROM {rows}",
        params(rows),
    ).fetchone()
    meets = _meetings(rows)
    by_outcome = dict(con.execute(f"SELECT outcome, count(*) FROM {meets} GROUP BY outcome",
                                  params(meets)).fetchall())
    prompts = con.execute(f"SELECT count(DISTINCT (prompt_id, variant, turn)), count(DISTINCT prompt_id) "
                          f"FROM {rows}", params(rows)).fetchone()
    assert v is not None and prompts is not None
    return Summary(
        dict(zip(("a_wins", "b_wins", "tie", "invalid"), (int(x) for x in v), strict=True)),
        {o: int(by_outcome.get(o, 0)) for o in OUTCOMES},
        int(prompts[0]),
        int(prompts[1]),
    )


def prompts_phrase(graphs: int, prompt_ids: int) -> str:
    """How many prompts two models met on, in words: "80 prompts", or, where prompts have variants or
    turns, "19 prompts (114 with variants and turns)" (one count of (prompt, variant, turn) graphs called
    "prompts" read as 114 prompt ids, audit38)."""
    ids = f"{prompt_ids:,} prompt{'' if prompt_ids == 1 else 's'}"
    return ids if graphs == prompt_ids else f"{ids} ({graphs:,} with variants and turns)"


def _outcome_filter(outcomes) -> list:
    """The meeting filter on outcome codes (None or empty: every outcome); refuses an unknown code."""
    if not outcomes:
        return []
    unknown = sorted(set(outcomes) - set(OUTCOMES))
    if unknown:
        raise LensError(f"Unknown outcome {', '.join(unknown)}; choose from {', '.join(OUTCOMES)}.")
    return [in_values("outcome", sorted(set(outcomes)))]


PROMPT_ORDER = "try_cast(prompt_id AS BIGINT) NULLS LAST, prompt_id, variant, turn"
"""Prompts in natural order: numeric ids by number (2 before 10), then the others by text."""


def n_prompts(store: Store, m: Matchup, outcomes=None) -> int:
    """How many prompts hold a meeting with one of ``outcomes`` (None: any): the pages' total."""
    meets = _meetings(_pair_rows(store, m)).filtered(_outcome_filter(outcomes))
    row = store.cursor().execute(
        f"SELECT count(*) FROM (SELECT DISTINCT prompt_id, variant, turn FROM {meets})", params(meets)
    ).fetchone()
    assert row is not None
    return int(row[0])


def meeting_table(store: Store, m: Matchup, outcomes=None, offset: int = 0, limit: int | None = None
                  ) -> pd.DataFrame:
    """The meetings with one of ``outcomes`` (None: any), prompts in natural order then judges by name:
    judge, prompt_id, variant, turn, category, n_verdicts, the verdict counts a_wins / b_wins / tie
    (from A's side), when_a_first, when_b_first and outcome (codes of ``OUTCOMES``). ``offset`` /
    ``limit`` page over meetings (the command line's table)."""
    meets = _meetings(_pair_rows(store, m)).filtered(_outcome_filter(outcomes))
    page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else (
        f" OFFSET {int(offset)}" if offset else "")
    return store.cursor().execute(
        f"SELECT judge, prompt_id, variant, turn, category, n_verdicts, a_wins, b_wins, tie, when_a_first, "
        f"when_b_first, outcome FROM {meets} ORDER BY {PROMPT_ORDER}, judge{page}",
        params(meets),
    ).df()


def prompt_page(store: Store, m: Matchup, outcomes=None, page: int = 0, size: int = PAGE_SIZE
                ) -> list[PromptMeetings]:
    """Page ``page`` (from 0) of ``size`` prompts holding a meeting with one of ``outcomes`` (None: any),
    in natural prompt order: each with its question, both answers and its meetings that pass the filter
    (judges by name), each meeting with its verdicts in source order."""
    if page < 0 or size < 1:
        raise LensError(f"There is no page {page + 1} of {size} prompts.")
    rows = _pair_rows(store, m)
    meets = _meetings(rows).filtered(_outcome_filter(outcomes))
    con = store.cursor()
    keys = Relation(
        f"(SELECT DISTINCT prompt_id, variant, turn FROM {meets} ORDER BY {PROMPT_ORDER} "
        f"LIMIT {int(size)} OFFSET {int(page) * int(size)})",
        meets.values,
    )
    chosen = con.execute(
        f"SELECT m.* FROM {meets} m JOIN {keys} k USING (prompt_id, variant, turn) "
        f"ORDER BY {PROMPT_ORDER}, judge", params(meets, keys)).df()
    if chosen.empty:
        return []
    from engine.ranking.vote_query import columns_of

    sequence = "verdict_id" if "verdict_id" in columns_of(con, rows) else "source_file, source_line"
    verdicts = con.execute(
        f"SELECT r.judge, r.prompt_id, r.variant, r.turn, r.res, r.a_first, r.explanation, r.annotator "
        f"FROM {rows} r JOIN (SELECT judge, prompt_id, variant, turn FROM {meets} m JOIN {keys} k "
        f"USING (prompt_id, variant, turn)) USING (judge, prompt_id, variant, turn) "
        f"ORDER BY {sequence}", params(rows, meets, keys)).df()
    texts = _texts(store, m, sorted(set(chosen["prompt_id"].astype(str))))
    return _assemble(m, chosen, verdicts, *texts)


def _texts(store: Store, m: Matchup, prompt_ids: list[str]) -> tuple[dict, dict]:
    """(question by (prompt, variant, turn), answer by (prompt, variant, turn, model)) of the page's
    prompts, read from the prompts and answers tables."""
    con = store.cursor()
    ids = in_values("prompt_id", prompt_ids)
    ds = in_values("dataset", [m.dataset])
    models = in_values("model", [m.model_a, m.model_b])
    q = con.execute(f"SELECT prompt_id, variant, turn, text FROM prompts WHERE {ds[0]} AND {ids[0]}",
                    dict(ds[1] + ids[1])).fetchall()
    a = con.execute(
        f"SELECT prompt_id, variant, turn, model, text FROM answers "
        f"WHERE {ds[0]} AND {ids[0]} AND {models[0]}",
        dict(ds[1] + ids[1] + models[1]),
    ).fetchall()
    questions = {(str(p), int(v), int(t)): x for p, v, t, x in q if isinstance(x, str)}
    answers = {(str(p), int(v), int(t), str(mod)): x for p, v, t, mod, x in a if isinstance(x, str)}
    return questions, answers


def _text_or_none(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _assemble(m: Matchup, chosen: pd.DataFrame, verdicts: pd.DataFrame, questions: dict, answers: dict
              ) -> list[PromptMeetings]:
    by_meeting: dict[tuple, list[VerdictShown]] = {}
    cols = ("judge", "prompt_id", "variant", "turn", "res", "a_first", "explanation", "annotator")
    for judge, p, v, t, res, a_first, why, who in zip(*(verdicts[c].tolist() for c in cols), strict=True):
        first = None if a_first is None or pd.isna(a_first) else (m.model_a if a_first else m.model_b)
        result = res if isinstance(res, str) else "invalid"
        by_meeting.setdefault((str(judge), str(p), int(v), int(t)), []).append(
            VerdictShown(first, result, _text_or_none(why), _text_or_none(who)))
    out: list[PromptMeetings] = []
    cols = ("judge", "prompt_id", "variant", "turn", "category", "outcome", "when_a_first", "when_b_first")
    for judge, p, v, t, cat, outcome, when_a, when_b in zip(*(chosen[c].tolist() for c in cols), strict=True):
        key = (str(p), int(v), int(t))
        meeting = Meeting(str(judge), str(outcome), _text_or_none(when_a), _text_or_none(when_b),
                          tuple(by_meeting.get((str(judge), *key), ())))
        if not out or (out[-1].prompt_id, out[-1].variant, out[-1].turn) != key:
            earlier = tuple((questions.get((key[0], key[1], k)), answers.get((key[0], key[1], k, m.model_a)),
                             answers.get((key[0], key[1], k, m.model_b))) for k in range(1, key[2]))
            out.append(PromptMeetings(*key, _text_or_none(cat), questions.get(key),
                                      answers.get((*key, m.model_a)), answers.get((*key, m.model_b)), (),
                                      earlier if any(any(x is not None for x in e) for e in earlier) else ()))
        last = out[-1]
        out[-1] = replace(last, meetings=(*last.meetings, meeting),
                          category=last.category or _text_or_none(cat))
    return out


def opponents(store: Store, dataset: str, model: str, judge: str | None = None,
              category: str | None = None) -> pd.DataFrame:
    """The models ``model`` met in the selection, most prompts first (then by name): model, prompts (prompt
    graphs: (prompt id, variant, turn)), prompt_ids (the prompt ids among them), verdicts."""
    from engine.ranking.vote_query import store_relation

    src = store_relation(store, dataset)
    conditions = [in_values(col, [val]) for col, val in (("judge", judge), ("category", category))
                  if val is not None]
    rows = src.filtered(conditions)
    me = Relation.bind("{me}", me=model)
    sql = (f"SELECT CASE WHEN model_a = {me} THEN model_b ELSE model_a END AS model, "
           f"count(DISTINCT (prompt_id, variant, turn)) AS prompts, count(DISTINCT prompt_id) AS prompt_ids, "
           f"count(*) AS verdicts FROM {rows} "
           f"WHERE model_a = {me} OR model_b = {me} GROUP BY 1 ORDER BY prompts DESC, model")
    return store.cursor().execute(sql, params(rows, me)).df()


def models_by_verdicts(store: Store, dataset: str, judge: str | None = None, category: str | None = None
                       ) -> pd.DataFrame:
    """Every model of the selection with its verdict count, most verdicts first (then by name): the
    browser's first picker."""
    from engine.ranking.vote_query import store_relation

    src = store_relation(store, dataset)
    rows = src.filtered([in_values(col, [val]) for col, val in (("judge", judge), ("category", category))
                         if val is not None])
    sql = (f"SELECT model, count(*) AS verdicts FROM (SELECT model_a AS model FROM {rows} UNION ALL "
           f"SELECT model_b FROM {rows}) GROUP BY model ORDER BY verdicts DESC, model")
    return store.cursor().execute(sql, params(rows)).df()


def order_text(meeting: Meeting, model_a: str, model_b: str) -> str:
    """What the judge concluded in each presentation order, in words ("" when no order is recorded)."""
    parts = [f"{first} shown first: {outcome_label(res, model_a, model_b)}"
             for first, res in ((model_a, meeting.when_a_first), (model_b, meeting.when_b_first)) if res]
    return "; ".join(parts)


def meeting_label(meeting: Meeting, model_a: str, model_b: str) -> str:
    """One meeting on one line: the judge, its outcome, and the result in each order."""
    orders = order_text(meeting, model_a, model_b)
    n = len(meeting.verdicts)
    verdicts = f"{n} verdict{'s' if n != 1 else ''}"
    return f"{meeting.judge}: {outcome_label(meeting.outcome, model_a, model_b)} ({verdicts}" + (
        f"; {orders})" if orders else ")")


def verdict_text(v: VerdictShown, model_a: str, model_b: str) -> str:
    """One verdict in words: who was shown first, the result, and the annotator when stored."""
    shown = "order not recorded" if v.first is None else f"{v.first} shown first"
    result = "unparsable judge output (not counted)" if v.result == "invalid" else outcome_label(
        v.result, model_a, model_b)
    return f"{shown} → {result}" + (f" · {v.annotator}" if v.annotator else "")


def summary_rows(m: Matchup, s: Summary) -> pd.DataFrame:
    """The meetings by outcome as a small table (outcome in words, meetings, share of meetings)."""
    total = s.n_meetings
    return pd.DataFrame({
        "outcome": [outcome_label(o, m.model_a, m.model_b) for o in OUTCOMES],
        "meetings": [s.meetings[o] for o in OUTCOMES],
        "share": [s.meetings[o] / total if total else float("nan") for o in OUTCOMES],
    })


def verdict_sentence(m: Matchup, s: Summary) -> str:
    """The single verdicts in one sentence: A's wins, B's wins, ties and the unparsable ones."""
    v = s.verdicts
    ties = f"{v['tie']:,} tie{'s' if v['tie'] != 1 else ''}"
    return (f"Verdicts: {v['a_wins']:,} {m.model_a} wins, {v['b_wins']:,} {m.model_b} wins, {ties}"
            + (f", {v['invalid']:,} unparsable (not counted)." if v["invalid"] else "."))


def has_texts(store: Store, dataset: str) -> bool:
    """Whether the store holds any question or answer text for ``dataset`` (a battle log usually has
    none: the page then says so once instead of on every prompt)."""
    row = store.cursor().execute(
        "SELECT EXISTS (SELECT 1 FROM prompts WHERE dataset = $d AND text IS NOT NULL) "
        "OR EXISTS (SELECT 1 FROM answers WHERE dataset = $d AND text IS NOT NULL)", {"d": dataset}
    ).fetchone()
    return bool(row and row[0])
