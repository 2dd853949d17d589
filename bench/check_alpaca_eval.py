"""Check ``leaderboard --baseline MODEL --length-control`` against AlpacaEval's own code and numbers.

    python bench/check_alpaca_eval.py [--repo /work/.mirror/tatsu-lab+alpaca_eval/repo]
        [--venv /work/venvs/alpaca_eval] [--models alpaca-7b phi-2 ...]
    python bench/check_alpaca_eval.py --annotator alpaca_eval_gpt4 --baseline text_davinci_003 \
        --models alpaca-7b Yi-34B-Chat causallm-14b evo-7b falcon-7b-instruct alpaca-farm-ppo-human

For each model, its real annotation file ``results/<model>/<annotator>/annotations.json`` (AlpacaEval
2's ``weighted_alpaca_eval_gpt4_turbo`` by default; AlpacaEval 1's ``alpaca_eval_gpt4`` files write
some draws as preference 0) is read from a clone of github.com/tatsu-lab/alpaca_eval (``git show``;
files kept out of the clone are skipped). Three numbers per model are printed side by side:

1. ours: the files imported together with ``python -m engine import``, then ``python -m engine
   leaderboard --baseline BASELINE --length-control --format json`` (processes, as a user runs
   them);
2. alpaca_eval's ``get_length_controlled_winrate`` itself, run in its own virtual environment on each
   file, with its ``length_controlled_minimal`` GLM (the formula ours computes), once as shipped and
   once with the solver's tolerance tightened to 1e-12 (liblinear stops at tol 1e-4 by default, so the
   shipped run is the optimum to about that precision). alpaca_eval downloads ``df_gamed.csv`` from
   Hugging Face on every call, for the instruction difficulty and the gamed baselines; this machine has
   no network, so the download is replaced by a stand-in file with the same columns whose values the
   minimal GLM never reads (it reads only the ``index`` column to look up a difficulty its formula
   leaves out). The check says which of the two it used;
3. the LC win rate and win rate AlpacaEval's leaderboard CSV in the same clone publishes
   (``length_controlled_v1``: with the instruction-difficulty and gamed-baseline terms).

Exit status 1 when ours and alpaca_eval's tightened run differ by more than 1e-6 for some model, or
the win rates differ from the CSV's by more than 1e-9.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from io import StringIO
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
BASELINE = "gpt4_1106_preview"
LEADERBOARDS = {
    "weighted_alpaca_eval_gpt4_turbo": "data_AlpacaEval_2",  # AlpacaEval 2, baseline gpt4_1106_preview
    "alpaca_eval_gpt4": "data_AlpacaEval",  # AlpacaEval 1, baseline text_davinci_003; preference 0 = draw
}
DEFAULT_MODELS = ("alpaca-7b", "alpaca-7b_concise", "alpaca-7b_verbose", "text_davinci_001", "phi-2",
                  "falcon-7b-instruct", "jina-chat", "oasst-sft-pythia-12b", "gpt4_gamed")

PEER = r'''
import json, sys
from pathlib import Path
import pandas as pd
import alpaca_eval.metrics.glm_winrate as glm

stand_in = sys.argv[1]
def no_download(*args, **kwargs):
    return stand_in
try:
    import huggingface_hub
    huggingface_hub.hf_hub_download(repo_id="tatsu-lab/alpaca_eval", filename="df_gamed.csv",
                                    repo_type="dataset")
    source = "downloaded"
except Exception:
    glm.hf_hub_download = no_download
    source = "stand-in"
out = {"df_gamed": source}
for path in sys.argv[2:]:
    ann = pd.read_json(path, dtype=False)
    model = str(ann["generator_2"].iloc[0])
    row = {}
    for name, tol in (("shipped", None), ("tight", 1e-12)):
        info = dict(glm.GLM_INFO["length_controlled_minimal"])
        info["kwargs"] = {**info["kwargs"], **({} if tol is None else {"tol": tol})}
        m = glm.get_length_controlled_winrate(ann.copy(), glm_name="length_controlled_minimal",
                                              save_weights_dir=None, glm_info=info,
                                              is_warn_extreme_changes=False)
        row[name] = m["length_controlled_winrate"] / 100
        row["win_rate"] = m["win_rate"] / 100
    out[model] = row
print(json.dumps(out))
'''


def git_show(repo: Path, path: str) -> bytes | None:
    """The file at HEAD of the clone, or None where the clone lacks it (large files kept out, or an LFS
    pointer in its place)."""
    res = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True)
    lfs = res.stdout.startswith(b"version https://git-lfs")
    return res.stdout if res.returncode == 0 and res.stdout and not lfs else None


def ours(files: list[Path], work: Path, baseline: str) -> pd.DataFrame:
    """Our LC win rate and win rate per model, from the CLI as processes."""
    db = work / "lens.duckdb"
    cli = [sys.executable, "-m", "engine", "--db", str(db)]
    subprocess.run([*cli, "import", "--dataset", "ae", *map(str, files)], check=True, cwd=ROOT,
                   capture_output=True)
    res = subprocess.run([*cli, "leaderboard", "--dataset", "ae", "--baseline", baseline, "--length-control",
                          "--format", "json"], check=True, cwd=ROOT, capture_output=True, text=True)
    table = pd.DataFrame(json.loads(res.stdout)["table"])
    return table.set_index("model")[["lc_win_rate", "win_rate_vs_baseline"]]


def peer(files: list[Path], work: Path, venv: Path) -> tuple[pd.DataFrame, str]:
    """alpaca_eval's own minimal GLM per file, in its virtual environment."""
    stand_in = work / "df_gamed.csv"
    pd.DataFrame({"model": "none", "index": range(805), "instruction_difficulty": 0.0,
                  "not_gamed_baseline": False, "preference": 0.5}).to_csv(stand_in, index=False)
    script = work / "peer.py"
    script.write_text(PEER)
    res = subprocess.run([str(venv / "bin" / "python"), str(script), str(stand_in), *map(str, files)],
                         check=True, capture_output=True, text=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    source = out.pop("df_gamed")
    return pd.DataFrame(out).T, source


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, default=Path("/work/.mirror/tatsu-lab+alpaca_eval/repo"))
    ap.add_argument("--venv", type=Path, default=Path("/work/venvs/alpaca_eval"))
    ap.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    ap.add_argument("--annotator", choices=sorted(LEADERBOARDS), default=ANNOTATOR)
    ap.add_argument("--baseline", default=BASELINE)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = []
        for model in args.models:
            data = git_show(args.repo, f"results/{model}/{args.annotator}/annotations.json")
            if data is None:
                print(f"skipped {model}: its annotation file is not in the clone")
                continue
            files.append(work / f"{model}.json")
            files[-1].write_bytes(data)
        mine = ours(files, work, args.baseline)
        theirs, source = peer(files, work, args.venv)
    board = f"src/alpaca_eval/leaderboards/{LEADERBOARDS[args.annotator]}/{args.annotator}_leaderboard.csv"
    published = pd.read_csv(StringIO(git_show(args.repo, board).decode()), index_col=0)
    rows = []
    for model in theirs.index:
        rows.append({
            "model": model,
            "ours_lc": mine.loc[model, "lc_win_rate"],
            "alpaca_minimal_tight": theirs.loc[model, "tight"],
            "alpaca_minimal_shipped": theirs.loc[model, "shipped"],
            "published_lc_v1": published["length_controlled_winrate"].get(model, float("nan")) / 100,
            "ours_win_rate": mine.loc[model, "win_rate_vs_baseline"],
            "published_win_rate": published["win_rate"].get(model, float("nan")) / 100,
        })
    table = pd.DataFrame(rows).set_index("model")
    table["diff_tight"] = (table["ours_lc"] - table["alpaca_minimal_tight"]).abs()
    table["diff_shipped"] = (table["ours_lc"] - table["alpaca_minimal_shipped"]).abs()
    table["diff_published"] = table["ours_lc"] - table["published_lc_v1"]
    table["diff_win_rate"] = (table["ours_win_rate"] - table["published_win_rate"]).abs()
    with pd.option_context("display.width", 200, "display.float_format", "{:.8f}".format):
        print(table.to_string())
    print(f"alpaca_eval's df_gamed.csv: {source}")
    print(f"max |ours - alpaca_eval minimal, tol 1e-12| = {table['diff_tight'].max():.3g}; "
          f"as shipped (tol 1e-4) = {table['diff_shipped'].max():.3g}; "
          f"max |win rate - published| = {table['diff_win_rate'].max():.3g}")
    ok = table["diff_tight"].max() <= 1e-6 and table["diff_win_rate"].max() <= 1e-9
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
