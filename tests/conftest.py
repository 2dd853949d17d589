"""Shared fixtures: an on-disk DuckDB store in a temp folder, and the shipped data imported once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip locally when an optional part is missing; in CI a missing part is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI must have this: {reason}")
    pytest.skip(reason)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh store location in a temp folder (the store file is created on first use)."""
    return tmp_path / "lens.duckdb"


@pytest.fixture
def empty_store(db_path: Path):
    from engine.store.connection import Store

    store = Store(db_path)
    yield store
    store.close()


@pytest.fixture(scope="session")
def shipped_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store file with the shipped default dataset imported (done once per test session)."""
    from engine.ingest.shipped import open_store

    path = tmp_path_factory.mktemp("shipped") / "lens.duckdb"
    store = open_store(path)
    store.close()
    return path


@pytest.fixture
def shipped_store(shipped_db: Path):
    from engine.store.connection import Store

    store = Store(shipped_db)
    yield store
    store.close()
