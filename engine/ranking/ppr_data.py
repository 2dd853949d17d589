"""PPR's inputs read from a stored dataset: the human judge's battles matched with a proxy judge's.

Matching rule (one SQL scan for every proxy, integer columns back, no strings in Python):

* which verdicts: valid ones (``invalid`` never counts); with ``ignore_ties`` each judge's ties are dropped
  before matching (the paper's option: a tie is then no comparison at all, for either judge);
* the key: ``battle_id`` when every verdict of the two judges carries one, else the prompt instance
  (prompt_id, variant, turn); with the unordered pair of models in both cases. Within one key the k-th
  human verdict (stored order) is matched with the k-th proxy verdict: one-to-one, never reused, so three
  human votes and two proxy verdicts on a pair make two labelled battles and one unmatched human vote;
* a labelled battle is oriented as the human's verdict shows it (its model_a, model_b); the proxy's
  verdict counts for the model it picked, whichever side it showed it on;
* the models ranked are those the human judge and every proxy compared (the others are named in a note);
  a verdict on a pair with another model is left out;
* the proxy's verdicts left unmatched are the unlabelled battles.

Bad input raises ``LensError`` in one sentence: no overlap, a model with no labelled or no unlabelled
battle, no unlabelled battle at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import LensError
from engine.ranking.ppr import Battles
from engine.store.sql import Relation, params

if TYPE_CHECKING:
    from engine.store.connection import Store


@dataclass(frozen=True)
class ProxyMatch:
    """One proxy's battles against the human's: the labelled battles (human and proxy verdicts of the
    same rows) and the unlabelled ones, with the counts the notes report."""

    proxy: str
    human: Battles
    proxy_labelled: Battles
    unlabelled: Battles
    human_unmatched: int
    proxy_other_models: int


@dataclass(frozen=True)
class PprInputs:
    """The models (index = code), the matched battles of each proxy and the human's models left out
    because some proxy never compared them."""

    models: list[str]
    matched_by: str
    matches: list[ProxyMatch]
    left_out: list[str]


def _valid_rows(store: Store, dataset: str, judges: list[str], ignore_ties: bool) -> Relation:
    """The verdicts of these judges that count: valid, and decisive under ``ignore_ties``."""
    rel = store.verdict_relation(dataset, judge=judges, valid_only=True)
    if ignore_ties:
        rel = Relation(f"(SELECT * FROM {rel} WHERE winner <> 'tie')", rel.values)
    return rel


def judge_models(store: Store, dataset: str, judge: str, ignore_ties: bool) -> list[str]:
    """The models a judge compared (sorted); for the human judge, the models PPR ranks."""
    rel = _valid_rows(store, dataset, [judge], ignore_ties)
    rows = store.cursor().execute(
        f"SELECT DISTINCT m FROM (SELECT model_a AS m FROM {rel} UNION ALL SELECT model_b FROM {rel}) "
        "ORDER BY m",
        params(rel)).fetchall()
    return [str(r[0]) for r in rows]


def battle_ids_complete(store: Store, rel: Relation) -> bool:
    """Every verdict of the relation carries a battle_id (then battles match by it)."""
    row = store.cursor().execute(f"SELECT count(*), count(battle_id) FROM {rel}", params(rel)).fetchone()
    return bool(row and row[0] > 0 and row[0] == row[1])


def _coded(rel: Relation, models_sql: str, key: str) -> str:
    """Verdict rows with model codes, the winner's code (-1 for a tie), the match key and each row's rank
    within its judge and key (stored order)."""
    return f"""
        SELECT v.verdict_id, v.judge, ma.code AS a, mb.code AS b,
               CASE v.winner WHEN 'A' THEN ma.code WHEN 'B' THEN mb.code ELSE -1 END AS win,
               {key} AS mkey,
               row_number() OVER (PARTITION BY v.judge, {key} ORDER BY v.verdict_id) AS rk
        FROM {rel} v JOIN ({models_sql}) ma ON ma.name = v.model_a
                     JOIN ({models_sql}) mb ON mb.name = v.model_b
    """


def _as_battles(a: np.ndarray, b: np.ndarray, win: np.ndarray) -> Battles:
    """Battles from model codes and the winner's code (-1: tie)."""
    a, b, win = (np.asarray(x, dtype=np.int64) for x in (a, b, win))
    return Battles(a, b, (win == a).astype(float), (win == b).astype(float))


def match_proxies(store: Store, dataset: str, human: str, proxies: list[str], models: list[str],
                  ignore_ties: bool, by_battle: bool) -> list[ProxyMatch]:
    """The labelled and unlabelled battles of every proxy (module docstring), in one scan of the verdicts."""
    rel = _valid_rows(store, dataset, [human, *proxies], ignore_ties)
    names = ", ".join(f"($lens_ppr_m{i}, {i})" for i in range(len(models)))
    models_sql = f"SELECT * FROM (VALUES {names}) t(name, code)"
    judges = ", ".join(f"($lens_ppr_j{i}, {i})" for i in range(len(proxies) + 1))  # 0: the human
    values = {f"lens_ppr_m{i}": m for i, m in enumerate(models)}
    values |= {f"lens_ppr_j{i}": j for i, j in enumerate([human, *proxies])}
    pair = "least(ma.code, mb.code), greatest(ma.code, mb.code)"  # the unordered pair, by model codes
    key = (f"hash(v.battle_id, {pair})" if by_battle
           else f"hash(v.prompt_id, v.variant, v.turn, {pair})")
    con = store.cursor()
    # rk: a verdict's rank within its judge and key; the window runs only over the keys a judge has more
    # than once (the rest are rank 1): on 4M verdicts with battle ids it halves the query's CPU
    sql = f"""
        WITH c0 AS (
            SELECT v.verdict_id, jc.code AS j, ma.code AS a, mb.code AS b,
                   CASE v.winner WHEN 'A' THEN ma.code WHEN 'B' THEN mb.code ELSE -1 END AS win,
                   {key} AS mkey
            FROM {rel} v JOIN (SELECT * FROM (VALUES {judges}) t(name, code)) jc ON jc.name = v.judge
                         JOIN ({models_sql}) ma ON ma.name = v.model_a
                         JOIN ({models_sql}) mb ON mb.name = v.model_b),
             dup AS (SELECT j, mkey FROM c0 GROUP BY j, mkey HAVING count(*) > 1),
             c AS (SELECT c0.*, 1 AS rk FROM c0 ANTI JOIN dup ON dup.j = c0.j AND dup.mkey = c0.mkey
                   UNION ALL
                   SELECT c0.*, row_number() OVER (PARTITION BY c0.j, c0.mkey ORDER BY c0.verdict_id) AS rk
                   FROM c0 SEMI JOIN dup ON dup.j = c0.j AND dup.mkey = c0.mkey),
             h AS (SELECT * FROM c WHERE j = 0),
             p AS (SELECT * FROM c WHERE j > 0)
        SELECT p.j AS pj, p.a AS pa, p.b AS pb, p.win AS pwin, h.a AS ha, h.b AS hb, h.win AS hwin,
               h.verdict_id IS NOT NULL AS labelled
        FROM p LEFT JOIN h ON h.mkey = p.mkey AND h.rk = p.rk
        ORDER BY p.verdict_id
    """
    cols = {name: np.asarray(col) for name, col in con.execute(sql, params(rel, values)).fetchnumpy().items()}
    totals = dict(con.execute(f"SELECT judge, count(*) FROM {rel} GROUP BY judge", params(rel)).fetchall())
    matches = []
    for code, proxy in enumerate(proxies, start=1):
        mine = cols["pj"] == code
        labelled = mine & cols["labelled"].astype(bool)
        rest = mine & ~labelled
        ha, hb = cols["ha"][labelled], cols["hb"][labelled]
        matches.append(ProxyMatch(
            proxy, _as_battles(ha, hb, cols["hwin"][labelled]), _as_battles(ha, hb, cols["pwin"][labelled]),
            _as_battles(cols["pa"][rest], cols["pb"][rest], cols["pwin"][rest]),
            human_unmatched=int(totals.get(human, 0)) - int(labelled.sum()),
            proxy_other_models=int(totals.get(proxy, 0)) - int(mine.sum())))
    return matches


def check_judges_distinct(names: list[str]) -> None:
    """A judge named twice (as the human and a proxy, or twice as a proxy) is refused in one sentence."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise LensError(f"Judge {name!r} is named twice in --human / --proxy; name each judge once.")
        seen.add(name)


def read_ppr_inputs(store: Store, dataset: str, human: str, proxies: list[str], *,
                    ignore_ties: bool = False, human_n: int | None = None, seed: int = 0) -> PprInputs:
    """Every proxy's battles matched with the human judge's (module docstring), checked: each model
    ranked has labelled and unlabelled battles for every proxy. ``human_n``: keep that many labelled
    battles per proxy (``keep_labelled``, generator seeded by ``seed``)."""
    check_judges_distinct([human, *proxies])
    human_set = judge_models(store, dataset, human, ignore_ties)
    shared = set(human_set)
    for proxy in proxies:
        shared &= set(judge_models(store, dataset, proxy, ignore_ties))
    models = sorted(shared)
    if len(models) < 2:
        raise LensError(f"Judge {human!r} and the proxies {', '.join(map(repr, proxies))} compared fewer "
                        f"than two models in common in dataset {dataset!r}"
                        f"{' once ties are ignored' if ignore_ties else ''}; PPR ranks two or more.")
    by_battle = battle_ids_complete(store, _valid_rows(store, dataset, [human, *proxies], ignore_ties))
    matches = []
    for m in match_proxies(store, dataset, human, proxies, models, ignore_ties, by_battle):
        if human_n is not None:
            m = keep_labelled(m, human_n, np.random.default_rng(seed))
        check_match(m, human, models, "battle_id" if by_battle else "prompt and pair")
        matches.append(m)
    left_out = [m for m in human_set if m not in shared]
    return PprInputs(models, "battle_id" if by_battle else "prompt and pair", matches, left_out)


def check_match(m: ProxyMatch, human: str, models: list[str], matched_by: str) -> None:
    """One sentence for a proxy PPR cannot use with this human judge."""
    k = len(models)
    if len(m.human) == 0:
        raise LensError(f"Judges {human!r} and {m.proxy!r} share no battle (matched by {matched_by}); "
                        "PPR needs battles both judged.")
    if len(m.unlabelled) == 0:
        raise LensError(f"Judge {m.proxy!r} judged no battle beyond those {human!r} judged; PPR needs the "
                        "proxy's verdicts on more battles than the human's (--human-n N keeps only N "
                        "labelled).")
    for what, battles in (("both judges judged", m.human), (f"only {m.proxy!r} judged", m.unlabelled)):
        counts = np.bincount(battles.model_a, minlength=k) + np.bincount(battles.model_b, minlength=k)
        missing = [models[i] for i in np.flatnonzero(counts == 0)]
        if missing:
            hint = " (--human-n N keeps only N battles labelled)" if battles is m.unlabelled else ""
            raise LensError(f"Model {missing[0]!r} is in no battle {what} (human {human!r}, proxy "
                            f"{m.proxy!r}); PPR needs every model in both sets{hint}.")


def read_judge_battles(store: Store, dataset: str, judge: str, models: list[str],
                       ignore_ties: bool) -> Battles:
    """Every counted verdict of one judge on pairs of these models, as battles (the one-judge baselines)."""
    rel = _valid_rows(store, dataset, [judge], ignore_ties)
    names = ", ".join(f"($lens_ppr_m{i}, {i})" for i in range(len(models)))
    models_sql = f"SELECT * FROM (VALUES {names}) t(name, code)"
    values = {f"lens_ppr_m{i}": m for i, m in enumerate(models)}
    cols = store.cursor().execute(
        f"SELECT a, b, win FROM ({_coded(rel, models_sql, 'v.prompt_id')}) ORDER BY verdict_id",
        params(rel, values)).fetchnumpy()
    return _as_battles(*(np.asarray(cols[c]) for c in ("a", "b", "win")))


def _take(b: Battles, idx: np.ndarray) -> Battles:
    return Battles(b.model_a[idx], b.model_b[idx], b.win_a[idx], b.win_b[idx])


def _concat(x: Battles, y: Battles) -> Battles:
    fields = ("model_a", "model_b", "win_a", "win_b")
    return Battles(*(np.concatenate([getattr(x, f), getattr(y, f)]) for f in fields))


def keep_labelled(m: ProxyMatch, n: int, rng: np.random.Generator) -> ProxyMatch:
    """The match with only ``n`` labelled battles, drawn at random without replacement (stored order kept);
    the proxy's verdicts on the others join the unlabelled battles and their human verdicts are set aside.
    The "few human labels" setting on a dataset where the human judged as many battles as the proxy."""
    total = len(m.human)
    if n < 1 or n >= total:
        raise LensError(f"--human-n keeps some of the {total:,} battles both {m.proxy!r} and the human "
                        f"judged and must be between 1 and {total - 1:,}; got {n}.")
    keep = np.sort(rng.choice(total, size=n, replace=False))
    rest = np.setdiff1d(np.arange(total), keep)
    return ProxyMatch(m.proxy, _take(m.human, keep), _take(m.proxy_labelled, keep),
                      _concat(m.unlabelled, _take(m.proxy_labelled, rest)),
                      human_unmatched=m.human_unmatched + len(rest), proxy_other_models=m.proxy_other_models)
