"""Issue 23, bug 7: no secret given to a judge run is stored or printed, in any part of a URL (user
part, query, fragment) or echoed back by a server from the request's headers; rows stored by older
versions are masked by a migration. The ground truth is the bytes of the store file and of the
command's output, searched for the secret strings themselves."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
from conftest import run_engine
from hypothesis import given, settings
from hypothesis import strategies as st
from judging_fake_openai import FakeOpenAI
from test_judging_api import judge_cmd

from engine.judging.urls import redact_url, redact_urls, server_label
from engine.store.connection import Store

SECRETS = ("UsErPw-0001", "QuErY-0002", "ToKeN-0003", "sk-VaLuE-0004", "FrAgM-0005", "HeAdEr-0006")


def _secret_url(base: str) -> str:
    """``base`` (http://host:port/v1) with a secret in each place a URL can carry one."""
    u, q, t, v, f, _h = SECRETS
    return base.replace("http://", f"http://user:{u}@") + f"?api-key={q}&token={t}&mode=x&k2={v}#{f}"


def _leaks(*texts: str) -> list[str]:
    return [s for s in SECRETS if any(s in t for t in texts)]


def test_secrets_in_every_part_of_the_url_reach_the_server_but_not_the_store_or_the_output(tmp_path):
    """Fails on fa0c159: the query secrets and the fragment are stored in judge_runs.params (the
    fragment also in judge_calls.server), and the client sent its paths after the query (404)."""
    db = tmp_path / "s.duckdb"
    with FakeOpenAI() as srv:
        url = _secret_url(srv.base_url)
        ok = run_engine(judge_cmd(db, "s", url, "--api-key", SECRETS[5])[3:])
        queries = list(srv.queries)
    assert ok.returncode == 0, ok.stderr
    # the key in the query was really used: every request carried it (the fragment never goes out)
    assert queries and all(f"api-key={SECRETS[1]}" in q and "#" not in q for q in queries)
    # the same URL with the server gone: a failed run is recorded too, and its error names the server
    dead = run_engine(judge_cmd(db, "s", url, "--max-retries", "0", "--api-key", SECRETS[5],
                                "--models", "gpt-4,llama-13b,vicuna-13b-v1.3")[3:])  # fmt: skip
    assert dead.returncode == 2 and f"http://***@127.0.0.1:{srv.port}/v1?api-key=***" in dead.stderr
    assert _leaks(ok.stdout, ok.stderr, dead.stdout, dead.stderr) == []
    with Store(db) as st_:
        params = [json.loads(r[0]) for r in st_.cursor().execute("SELECT params FROM judge_runs").fetchall()]
        servers = {r[0] for r in st_.cursor().execute("SELECT DISTINCT server FROM judge_calls").fetchall()}
    assert [p["base_url"] for p in params] == [redact_url(url)] * 2
    assert servers == {f"{srv.base_url}?api-key=***&token=***&mode=x&k2=***"} == {server_label([url])}
    assert _leaks(db.read_bytes().decode("latin-1")) == []


class _EchoServer:
    """A local HTTP server that refuses every chat request, quoting the request's Authorization header
    and URL in its error body (as some proxies do): ``status`` 400 fails the call, 401 the key."""

    def __init__(self, status: int):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                msg = f"bad request {self.path} with {self.headers.get('Authorization')}"
                data = json.dumps({"error": {"message": msg}}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.status = status
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # a shutdown check every 0.02 s (serve_forever's default 0.5 s made close() wait ~0.4 s)
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("with_user", [True, False])
def test_a_server_that_echoes_the_key_and_the_url_in_its_error_gets_them_masked(tmp_path, with_user):
    """The echoed Authorization header (``Bearer KEY``, or ``Basic base64(user:pw)`` when the URL has a
    user part: the HTTP client sends that instead) and request path are masked in the one sentence.
    Fails on fa0c159: the header and the query reach stderr."""
    srv = _EchoServer(400)
    url = _secret_url(srv.base_url)
    if not with_user:
        url = url.replace(f"user:{SECRETS[0]}@", "")
    try:
        out = run_engine(judge_cmd(tmp_path / "e.duckdb", "e", url, "--api-key", SECRETS[5],
                                   "--max-retries", "0")[3:])  # fmt: skip
    finally:
        srv.close()
    assert out.returncode == 1 and ("Basic ***" if with_user else "Bearer ***") in out.stderr, out.stderr
    assert "?api-key=***&token=***&mode=x&k2=***" in out.stderr
    assert _leaks(out.stdout, out.stderr, (tmp_path / "e.duckdb").read_bytes().decode("latin-1")) == []


def test_secrets_stored_by_older_versions_are_masked_by_the_migration(db_path):
    """Migration 042 rewrites old rows to what urls.redact_url / server_label give today (a second
    path: SQL regular expressions against the Python parser). Fails with the migration removed."""
    urls = [
        "http://h1/v1?api-key=QuErY-0002&x=2",
        "https://h2:8000/v1?token=ToKeN-0003#FrAgM-0005",
        "http://h3/v1?mode=a&Access_Token=ToKeN-0003&sig=QuErY-0002&k2=sk-VaLuE-0004",
        "http://h4/v1#FrAgM-0005",
    ]
    with Store(db_path) as st_, st_.transaction() as cur:
        cur.execute(
            "INSERT INTO judge_runs (kind, dataset, backend, model, params) VALUES ('judge', 'd', 'openai',"
            " 'm#1', ?)",
            [json.dumps({"base_url": ",".join(urls), "model": "m#1"})],
        )
        for i, u in enumerate(urls):  # the label fa0c159 stored: name-matched values masked, fragment kept
            old = server_label([u.split("#")[0]]) + (f"#{u.split('#')[1]}" if "#" in u else "")
            cur.execute(
                "INSERT INTO judge_calls (call_key, backend, model, template_id, template_version, messages,"
                " decoding, server) VALUES (?, 'openai', 'm', 't', 1, '[]', '{}', ?)",
                [f"k{i}", old.replace("***", "sk-VaLuE-0004")],
            )
        cur.execute("DELETE FROM schema_migrations WHERE version = 42")  # as before the migration
    with Store(db_path) as st_:  # reopening applies it
        (params,) = st_.cursor().execute("SELECT params FROM judge_runs").fetchone()
        calls = st_.cursor().execute("SELECT server FROM judge_calls ORDER BY call_key").fetchall()
    servers = [r[0] for r in calls]
    assert json.loads(params) == {"base_url": ",".join(redact_url(u) for u in urls), "model": "m#1"}
    assert servers == [server_label([u]) for u in urls]
    assert _leaks(params, *servers) == []


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~", min_size=1,
                max_size=12)  # fmt: skip
_plain_value = _word.filter(lambda v: not re.match(r"(?i)(sk|pk|rk|gh[pousr]|xox[abp]|hf)[-_]", v))
"""A plain query value: not shaped like an API key (a value starting ``sk-``, ``PK_``, ``ghp_`` … is a
key wherever it sits, so it is masked even under a harmless name)."""
_secret_name = st.sampled_from(["key", "api-key", "api_key", "apiKey", "token", "access_token", "Auth",
                                "password", "sig", "X-Session-Id", "client_secret", "jwt"])  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    host=st.sampled_from(["h", "127.0.0.1:8000", "[::1]:9", "api.example.com"]),
    path=st.lists(_word, max_size=3),
    user=st.one_of(st.none(), _word),
    plain=st.lists(st.tuples(st.sampled_from(["mode", "api-version", "x"]), _plain_value), max_size=2),
    named=st.lists(st.tuples(_secret_name, _word), max_size=3),
    fragment=st.one_of(st.none(), _word),
    in_text=st.booleans(),
)
def test_no_secret_survives_redaction_wherever_it_sits(host, path, user, plain, named, fragment, in_text):
    """Any URL built from secret parts: none of them is in redact_url, server_label or redact_urls of a
    sentence holding it; the host, path and plain query values are kept."""
    marks = [f"SECRET{i}z" for i in range(4)]
    query = [(k, v) for k, v in plain] + [(k, marks[0] + v) for k, v in named]
    url = f"http://{f'{marks[1]}{user}@' if user else ''}{host}/{'/'.join(path)}"
    if query:
        url += "?" + "&".join(f"{k}={quote(v)}" for k, v in query)
    if fragment:
        url += f"#{marks[2]}{fragment}"
    shown = [redact_url(url), server_label([url]), redact_urls(f"cannot reach {url}: refused.")]
    assert not any(m in s for m in marks for s in shown), shown
    assert all(host in s and "/".join(path) in s for s in shown)
    assert all(f"{k}={quote(v)}" in s for k, v in plain for s in shown)
