"""Prompt and answer texts from their own files into a stored dataset (``import-texts``, the Data page).

Read (``engine.ingest.text_files``), match, store. The texts of the files are matched to the dataset's
verdicts by key: a prompt text by (prompt id, variant, turn), an answer text by (prompt id, variant,
turn, model) where the model is either side of a verdict. The match report counts both, lists the first
unmatched ids and the answer models no verdict names, and says how many of the verdicts' prompts and
answers have a text once the import is stored. Refused, with nothing stored, when a record of the files
gives no text (all-or-nothing, as a verdict import) or when not one text matches a verdict (the files
belong to another dataset, or name prompts another way). Within the files the last text of a key is
kept, as FastChat's and Arena-Hard's answer loaders keep it (a dict by question id: a later line
replaces an earlier one), so the text stored is the one their judge saw; a repeat with the same text is
nothing to report (AlpacaEval's outputs files all carry the same instructions), one with another text is
counted; a key already stored gets the file's text (a re-import replaces).

Storing takes a new dataset version in the same transaction as the texts, so everything keyed on the
version (the answer style counts of ``engine.style``, the results cache, the app's caches) is computed
again from the new texts; texts identical to the stored ones change nothing and take no version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import LensError
from engine.ingest.text_files import Source, TextsRead, read_text_files
from engine.store import writes
from engine.store.attached import attached_relation
from engine.store.connection import Store
from engine.store.datasets import require_dataset
from engine.store.sql import Relation, in_values, params, scalar

SHOWN = 5
"""Unmatched ids listed by a report."""
TURN = "CASE WHEN turn <> 1 THEN ' turn ' || turn ELSE '' END"
"""SQL: a text's turn as the suffix of its prompt id in a report (nothing for turn 1)."""


@dataclass(frozen=True)
class TextsMatch:
    """How the texts of the files meet the dataset's verdicts."""

    prompts: int
    """Distinct prompt keys (prompt, variant, turn) in the files."""
    prompts_matched: int
    answers: int
    """Distinct answer keys (prompt, variant, turn, model) in the files."""
    answers_matched: int
    repeats: int
    """Distinct other texts the files give for a key an earlier row had (the last text is kept)."""
    unmatched_prompts: tuple[str, ...]
    unmatched_answers: tuple[str, ...]
    unknown_models: tuple[str, ...]
    """Models of the answer files that no verdict of the dataset names (at most ``SHOWN``)."""
    n_unknown_models: int
    verdict_prompts: int
    """Distinct prompt keys of the dataset's verdicts..."""
    verdict_prompts_with_text: int
    """...and how many have a text once the import is stored."""
    verdict_answers: int
    verdict_answers_with_text: int

    @property
    def matched(self) -> int:
        """Texts of the files that meet a verdict."""
        return self.prompts_matched + self.answers_matched

    def lines(self) -> list[str]:
        """The report, one sentence a line."""
        out = []  # a kind the files do not hold is not reported as "0 of 0"
        if self.prompts:
            out.append(f"prompt texts: {self.prompts_matched:,} of {self.prompts:,} match a verdict's prompt")
        if self.answers:
            out.append(f"answer texts: {self.answers_matched:,} of {self.answers:,} match a verdict's prompt "
                       "and model")
        if self.unmatched_prompts:
            more = self.prompts - self.prompts_matched - len(self.unmatched_prompts)
            out.append("prompts no verdict has: " + ", ".join(self.unmatched_prompts)
                       + (f" and {more:,} more" if more else ""))
        if self.unknown_models:
            more = self.n_unknown_models - len(self.unknown_models)
            out.append("answer models no verdict names: " + ", ".join(self.unknown_models)
                       + (f" and {more:,} more" if more else ""))
        if self.unmatched_answers:
            more = self.answers - self.answers_matched - len(self.unmatched_answers)
            out.append("answers no verdict has: " + ", ".join(self.unmatched_answers)
                       + (f" and {more:,} more" if more else ""))
        if self.repeats:
            out.append(f"{self.repeats:,} rows give another text for the key of an earlier row; the last "
                       "text of each key is kept")
        out.append(f"with these texts {self.verdict_prompts_with_text:,} of the {self.verdict_prompts:,} "
                   f"prompts and {self.verdict_answers_with_text:,} of the {self.verdict_answers:,} "
                   "answers the verdicts compare have a text")
        return out


@dataclass(frozen=True)
class TextsResult:
    """A stored (or unchanged) texts import."""

    dataset: str
    changed: bool
    """False when every text was already stored as it is (no version taken)."""
    prompts: int
    answers: int
    version: int | None
    revision: int | None
    categorised: int = 0
    """Stored verdicts without a category that took their prompt's category from the texts."""
    categories_apart: bool = False
    """The texts give categories an attached dataset's verdicts (read in place) cannot take."""

    def summary(self) -> str:
        """One line for the CLI and the page."""
        if not self.changed:
            return f"dataset {self.dataset} already holds these texts; nothing changed"
        kinds = ((self.prompts, "prompt"), (self.answers, "answer"))
        what = " and ".join(f"{n:,} {kind} texts" for n, kind in kinds if n)
        took = (f"; {self.categorised:,} verdicts without a category took their prompt's category"
                if self.categorised else "")
        if self.categories_apart:
            took = ("; the prompts' categories stay with the texts: the attached files' verdicts are read "
                    "in place, so --category filters do not see them (--set category=... does, per dataset)")
        return f"stored {what} in dataset {self.dataset} (now version {self.revision}){took}"


def _last_per_key(read: TextsRead, kind: str) -> Relation:
    """The staged texts of ``kind``, the last row of each key (file order, files in the order given): a
    semi-join on the last ``seq`` of each key, so the texts stream through and only the keys are held."""
    key = ", ".join(writes.TEXT_KEYS[kind])
    path = read.prompts_file if kind == "prompts" else read.answers_file
    return Relation.bind(f"(SELECT * EXCLUDE (seq) FROM read_parquet({{f}}) WHERE seq IN "
                         f"(SELECT max(seq) FROM read_parquet({{f}}) GROUP BY {key}))", f=path)


def _verdicts(store: Store, dataset: str) -> Relation:
    attached = attached_relation(store, dataset)
    if attached is not None:
        return attached
    return Relation("verdicts").filtered([in_values("dataset", [dataset])])


def _count(store: Store, sql: str, *parts: Relation) -> int:
    return int(scalar(store.cursor(), sql, params(*parts)))


def _first(store: Store, sql: str, *parts: Relation) -> tuple[str, ...]:
    return tuple(str(r[0]) for r in store.cursor().execute(f"{sql} LIMIT {SHOWN}", params(*parts)).fetchall())


def match_texts(store: Store, dataset: str, read: TextsRead) -> TextsMatch:
    """How the staged texts meet ``dataset``'s verdicts (reads the store, writes nothing)."""
    require_dataset(store, dataset)
    p, a, v = _last_per_key(read, "prompts"), _last_per_key(read, "answers"), _verdicts(store, dataset)
    vp = f"(SELECT DISTINCT prompt_id, variant, turn FROM {v})"
    va = (f"(SELECT prompt_id, variant, turn, model_a AS model FROM {v} UNION "
          f"SELECT prompt_id, variant, turn, model_b FROM {v})")
    on_p, on_a = "USING (prompt_id, variant, turn)", "USING (prompt_id, variant, turn, model)"
    stored_p = Relation.bind("(SELECT prompt_id, variant, turn FROM prompts WHERE dataset = {d})", d=dataset)
    stored_a = Relation.bind("(SELECT prompt_id, variant, turn, model FROM answers WHERE dataset = {d})",
                             d=dataset)
    variants = Relation.bind(  # distinct (key, text) pairs: a key's other texts are its conflicts
        "(SELECT (SELECT count(*) FROM (SELECT DISTINCT prompt_id, variant, turn, hash(text) FROM "
        "read_parquet({f1}))) + (SELECT count(*) FROM (SELECT DISTINCT prompt_id, variant, turn, model, "
        "hash(text) FROM read_parquet({f2}))))", f1=read.prompts_file, f2=read.answers_file)
    n_texts = _count(store, f"SELECT {variants}", variants)
    prompts = _count(store, f"SELECT count(*) FROM {p}", p)
    answers = _count(store, f"SELECT count(*) FROM {a}", a)
    models = Relation(f"(SELECT DISTINCT model FROM {a} WHERE model NOT IN (SELECT model FROM {va}))",
                      a.values + v.values)
    return TextsMatch(
        prompts=prompts,
        prompts_matched=_count(store, f"SELECT count(*) FROM {p} SEMI JOIN {vp} {on_p}", p, v),
        answers=answers,
        answers_matched=_count(store, f"SELECT count(*) FROM {a} SEMI JOIN {va} {on_a}", a, v),
        repeats=n_texts - prompts - answers,
        unmatched_prompts=_first(store, f"SELECT prompt_id || {TURN} FROM {p} ANTI JOIN {vp} {on_p} "
                                        "ORDER BY prompt_id, turn", p, v),
        unmatched_answers=_first(store, f"SELECT model || ' on ' || prompt_id || {TURN} FROM {a} "
                                        f"ANTI JOIN {va} {on_a} WHERE model IN (SELECT model FROM {va}) "
                                        "ORDER BY prompt_id, turn, model", a, v),
        unknown_models=_first(store, f"SELECT model FROM {models} ORDER BY model", models),
        n_unknown_models=_count(store, f"SELECT count(*) FROM {models}", models),
        verdict_prompts=_count(store, f"SELECT count(*) FROM {vp}", v),
        verdict_prompts_with_text=_count(
            store, f"SELECT count(*) FROM {vp} SEMI JOIN (SELECT prompt_id, variant, turn FROM {p} UNION ALL "
                   f"SELECT * FROM {stored_p}) {on_p}", v, p, stored_p),
        verdict_answers=_count(store, f"SELECT count(*) FROM {va}", v),
        verdict_answers_with_text=_count(
            store, f"SELECT count(*) FROM {va} SEMI JOIN (SELECT prompt_id, variant, turn, model FROM {a} "
                   f"UNION ALL SELECT * FROM {stored_a}) {on_a}", v, a, stored_a),
    )


def refusal(read: TextsRead, match: TextsMatch, dataset: str) -> str | None:
    """Why the texts cannot be stored (one sentence), or None."""
    if read.n_bad:
        more = f" ({read.n_bad - 1:,} more records give no text either)" if read.n_bad > 1 else ""
        return f"{read.first_bad}{more}; nothing was stored."
    if match.prompts + match.answers == 0:
        return "The files hold no prompt or answer text; nothing was stored."
    if match.matched == 0:
        ids = ", ".join(match.unmatched_prompts or match.unmatched_answers)
        return (f"Not one text of the files matches a verdict of dataset {dataset!r} (by prompt id, turn and "
                f"model; the files name {ids or 'other models'}); nothing was stored.")
    return None


def store_texts(store: Store, dataset: str, read: TextsRead, match: TextsMatch) -> TextsResult:
    """Store the staged texts in ``dataset`` in one transaction (a new version when any changed), or raise
    ``LensError`` with the refusal and store nothing."""
    why = refusal(read, match, dataset)
    if why is not None:
        raise LensError(why)
    p, a = _last_per_key(read, "prompts"), _last_per_key(read, "answers")
    with store.transaction() as tx:
        if not writes.dataset_exists(tx, dataset):
            raise LensError(f"There is no dataset named {dataset!r} any more; nothing was stored.")
        changed = sum(writes.texts_changed(tx, dataset, kind, rel)
                      for kind, rel in (("prompts", p), ("answers", a)))
        if not changed and not writes.uncategorised_verdicts(tx, dataset):
            return TextsResult(dataset, False, match.prompts, match.answers, None, None)
        writes.upsert_text_file_rows(tx, dataset, "prompts", p)
        writes.upsert_text_file_rows(tx, dataset, "answers", a)
        categorised = writes.fill_verdict_categories(tx, dataset)
        apart = attached_relation(store, dataset) is not None and bool(
            scalar(tx, f"SELECT count(*) FROM {p} WHERE category IS NOT NULL", params(p)))
        version = writes.bump_dataset(tx, dataset)
        revision = writes.revision(tx, dataset)
    return TextsResult(dataset, True, match.prompts, match.answers, version, revision, categorised, apart)


def import_texts(store: Store, dataset: str, sources: Sequence[Source], *, shape: str | None = None,
                 dry_run: bool = False) -> tuple[TextsRead, TextsMatch, TextsResult | None]:
    """Read, match and (unless ``dry_run``) store text files in ``dataset``; the read, its match report
    and the result (None for a dry run). Refusals raise ``LensError`` (one sentence, nothing stored)."""
    require_dataset(store, dataset)
    with store.unheld():  # reading the files needs no store
        read = read_text_files(sources, forced_shape=shape, dataset=dataset)
    match = match_texts(store, dataset, read)
    if dry_run:
        why = refusal(read, match, dataset)
        if why is not None:
            raise LensError(why)
        return read, match, None
    return read, match, store_texts(store, dataset, read, match)
