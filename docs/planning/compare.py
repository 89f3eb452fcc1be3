"""Predicted against measured, from paired_runs.sh's files.

    compare.py SWIFTLET DIR

Each pair: `swiftlet plan` for the TinyLlama-1.1B shape, calibrated from the
SmolLM2-135M run alone (and on its machine profile), against the TinyLlama run
that followed it. The decode figures use the bench's geometry (an 8-token
prompt, then 32 steps); goodput the load test's prompt, output and targets.
"""
import json
import statistics
import subprocess
import sys

S, D = sys.argv[1:3]


def plan(*args):
    p = subprocess.run([S, "plan", "--preset", "tinyllama-1.1b", "--type", "Q8_0", "--rate", "1",
                        "--max-batch", "64", "--json", *args], capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(p.stderr)
    return json.loads(p.stdout)


def tok_s(path, test):
    with open(path) as f:
        return next(r["tok_s"] for r in json.load(f)["results"] if r["test"] == test)


errors = {1: [], 16: []}
print("| pair | SmolLM2 b1 / b16 | predicted TinyLlama b1 / b16 | measured b1 / b16 | error b1 / b16 |")
print("|---|---|---|---|---|")
for i in ("1", "2", "3", "g"):
    smol = f"{D}/smol_engine_{i}.json"
    tiny = f"{D}/tiny_engine_{i}.json"
    j = plan("--cpu-profile", smol, "--calibrate", smol, "--prompt-tokens", "8", "--output-tokens", "33")
    cells = []
    for b, test in ((1, "tg32"), (16, "tg32@b16")):
        predicted = j["batches"][b - 1]["decode_tok_s"]
        measured = tok_s(tiny, test)
        errors[b].append((predicted - measured) / measured * 100)
        cells.append((tok_s(smol, test), predicted, measured, errors[b][-1]))
    print(f"| {i} | {cells[0][0]:.1f} / {cells[1][0]:.1f} | {cells[0][1]:.2f} / {cells[1][1]:.2f} "
          f"| {cells[0][2]:.2f} / {cells[1][2]:.2f} | {cells[0][3]:+.0f}% / {cells[1][3]:+.0f}% |")
print(f"median error: b1 {statistics.median(errors[1]):+.0f}%, b16 {statistics.median(errors[16]):+.0f}%")

with open(f"{D}/tiny_load.json") as f:
    points = json.load(f)["points"]
best = max(points, key=lambda p: p["goodput_req_s"])
prompt = round(statistics.mean(p["mean_prompt_tokens"] - p["mean_cached_prompt_tokens"] for p in points))
j = plan("--cpu-profile", f"{D}/smol_engine_g.json", "--calibrate", f"{D}/smol_engine_g.json",
         "--calibrate", f"{D}/smol_load.json", "--prompt-tokens", str(prompt), "--output-tokens", "32",
         "--slo", "ttft=8s,tpot=330ms")
predicted = j["at_slo"]["replica_req_s"] if j["feasible"] else 0.0
print(f"goodput: predicted {predicted:.3f} req/s at batch {j['at_slo']['batch'] if j['feasible'] else '-'}"
      f" ({prompt} prompt tokens), measured {best['goodput_req_s']:.3f} at {best['label']}, error "
      f"{(predicted - best['goodput_req_s']) / best['goodput_req_s'] * 100:+.0f}%")
print("TinyLlama load points:", ", ".join(f"{p['label']}: {p['goodput_req_s']:.3f}" for p in points))
e = j["efficiency"]
print("factors: decode", ", ".join(f"b{d['batch']} {d['factor']:.3f}" for d in e["decode"]),
      f"prefill {e['prefill']:.3f} serving {e['serving']:.3f}")
