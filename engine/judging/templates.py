"""Prompt templates: TOML files ``<id>.v<version>.toml`` with a system and a user message.

Shipped templates live in ``engine/judging/templates/`` (written in the project's own words); users
add theirs in a folder given by ``--templates`` or ``$LENS_TEMPLATES``. A template is selected by id
and, optionally, version. Without a version, a shipped id means its highest *shipped* version: a
user file ``pairwise.v2.toml`` is used only when asked for as ``pairwise@2``, so dropping a file in
the templates folder never silently changes what an existing command does. An id only users ship
defaults to its highest version. Placeholders are ``{{name}}``; rendering replaces exactly those, so
braces in questions and answers pass through untouched, and a missing value is an error rather than
a silently empty prompt. The id and version are part of every call's cache key.

Templates whose output is parsed declare the exact tags they ask for in a ``[tags]`` table (tag →
meaning): pairwise ``"[[A]]" = "A"`` … (meanings A, B, tie), score ``"[[4]]" = 4`` (integers),
soft ``A = "A"`` (the letter tokens). Without the table the kind's defaults apply (parsing module).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from engine.errors import LensError
from engine.judging.parsing import SCORE_TAGS, SOFT_LETTERS, VERDICT_TAGS

SHIPPED_DIR = Path(__file__).resolve().parent / "templates"
KINDS = ("pairwise", "score", "soft", "answer", "paraphrase", "equivalence")
_FILE = re.compile(r"^([a-z0-9_\-]+)\.v(\d+)\.toml$")
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
_DEFAULT_TAGS: dict[str, dict] = {"pairwise": VERDICT_TAGS, "score": SCORE_TAGS, "soft": SOFT_LETTERS}


@dataclass(frozen=True)
class Template:
    """A versioned prompt template: system and user text with ``{{name}}`` placeholders, and its tags."""

    id: str
    version: int
    kind: str
    system: str
    user: str
    description: str = ""
    path: str = ""
    tags: tuple[tuple[str, object], ...] = ()
    shipped: bool = False

    @property
    def tag_map(self) -> dict:
        """The exact output tags this template asks for, and what each means (kind defaults if none)."""
        return dict(self.tags) if self.tags else dict(_DEFAULT_TAGS.get(self.kind, {}))

    @property
    def ref(self) -> str:
        """``id@version``: how runs and the call cache name this template."""
        return f"{self.id}@{self.version}"

    @property
    def placeholders(self) -> set[str]:
        """The ``{{name}}`` placeholders the template needs filled."""
        return set(_PLACEHOLDER.findall(self.system)) | set(_PLACEHOLDER.findall(self.user))

    def render(self, **values: object) -> tuple[tuple[str, str], ...]:
        """The chat messages with every ``{{name}}`` replaced; a missing value raises LensError."""
        missing = self.placeholders - set(values)
        if missing:
            raise LensError(f"Template {self.id} v{self.version} needs a value for {sorted(missing)[0]!r}.")

        def fill(s: str) -> str:
            return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), s)

        msgs = []
        if self.system.strip():
            msgs.append(("system", fill(self.system)))
        msgs.append(("user", fill(self.user)))
        return tuple(msgs)


def _load(path: Path) -> Template:
    m = _FILE.match(path.name)
    if not m:
        raise LensError(f"Template file {path.name} is not named <id>.v<version>.toml.")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise LensError(f"Template file {path} is not valid TOML: {exc}.") from exc
    tid, ver = m.group(1), int(m.group(2))
    if raw.get("id", tid) != tid or int(raw.get("version", ver)) != ver:
        raise LensError(f"Template file {path.name} declares an id or version that differs from its name.")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise LensError(f"Template file {path.name} has kind {kind!r}; expected one of {', '.join(KINDS)}.")
    if not isinstance(raw.get("user"), str) or not raw["user"].strip():
        raise LensError(f"Template file {path.name} has no user message.")
    return Template(
        tid,
        ver,
        kind,
        str(raw.get("system", "")),
        raw["user"],
        str(raw.get("description", "")),
        str(path),
        _tags(path.name, kind, raw.get("tags")),
        path.resolve().parent == SHIPPED_DIR,
    )


def _tags(name: str, kind: str, raw: object) -> tuple[tuple[str, object], ...]:
    """Validate a ``[tags]`` table for the template's kind."""
    if raw is None:
        return ()
    if kind not in _DEFAULT_TAGS:
        raise LensError(f"Template file {name} declares tags, but {kind} templates are not parsed by tag.")
    if not isinstance(raw, dict) or not raw or not all(isinstance(k, str) and k for k in raw):
        raise LensError(f"Template file {name} has a [tags] table that is empty or not tag = meaning.")
    if kind == "score":
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in raw.values()):
            raise LensError(f"Template file {name}: every score tag must mean a whole number.")
    else:
        allowed = {"A", "B", "tie"} if kind == "pairwise" else {"A", "B"}
        bad = [v for v in raw.values() if v not in allowed]
        if bad or not {"A", "B"} <= set(raw.values()):
            raise LensError(
                f"Template file {name}: {kind} tags must mean {', '.join(sorted(allowed))} and cover A and B."
            )
    return tuple(raw.items())


def _dirs(user_dir: str | os.PathLike[str] | None) -> list[Path]:
    dirs = [SHIPPED_DIR]
    extra = user_dir or os.environ.get("LENS_TEMPLATES")
    if extra:
        p = Path(extra)
        if not p.is_dir():
            raise LensError(f"The templates folder {p} does not exist.")
        dirs.append(p)
    return dirs


def list_templates(user_dir: str | os.PathLike[str] | None = None) -> list[Template]:
    """Every available template (shipped and user), sorted by id and version."""
    found: dict[tuple[str, int], Template] = {}
    for d in _dirs(user_dir):
        for path in sorted(d.glob("*.toml")):
            t = _load(path)
            if (t.id, t.version) in found:
                raise LensError(
                    f"Template {t.id} v{t.version} exists twice ({found[(t.id, t.version)].path} and {path})."
                )
            found[(t.id, t.version)] = t
    return [found[k] for k in sorted(found)]


def get_template(
    template_id: str,
    version: int | None = None,
    *,
    kind: str | None = None,
    user_dir: str | os.PathLike[str] | None = None,
) -> Template:
    """The template ``template_id`` at ``version``.

    Without a version: the highest shipped version of a shipped id, else the highest user version.
    """
    cands = [t for t in list_templates(user_dir) if t.id == template_id]
    if version is not None:
        cands = [t for t in cands if t.version == version]
    elif any(t.shipped for t in cands):
        cands = [t for t in cands if t.shipped]
    if not cands:
        known = sorted({t.id for t in list_templates(user_dir)})
        v = f" v{version}" if version is not None else ""
        raise LensError(f"There is no template {template_id!r}{v}; known templates: {', '.join(known)}.")
    t = cands[-1]
    if kind is not None and t.kind != kind:
        raise LensError(
            f"Template {t.id} v{t.version} is a {t.kind} template, but a {kind} template is needed here."
        )
    return t


def parse_template_ref(ref: str) -> tuple[str, int | None]:
    """``pairwise`` or ``pairwise@2`` → (id, version or None)."""
    if "@" in ref:
        tid, _, ver = ref.partition("@")
        if not ver.isdigit():
            raise LensError(f"Template reference {ref!r} should look like id@version, e.g. pairwise@1.")
        return tid, int(ver)
    return ref, None
