#!/usr/bin/python3
"""Reference renderer for chat templates: Debian's python3-jinja2, set up as
Hugging Face transformers renders chat templates (ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, a raise_exception global and
strftime_now).

Usage:
  chat_template_reference.py TEMPLATE.jinja [--raw] < input.json
  chat_template_reference.py TEMPLATE.jinja --seed N [--count K]

input.json is either a list of conversations or an object
  {"bos_token": ..., "eos_token": ..., "date_string": ... (optional),
   "conversations": [...]}
where a conversation is {"messages": [{"role", "content"}, ...],
"add_generation_prompt": bool}. --seed generates K random conversations
instead of reading stdin.

Output: a JSON list with, per conversation, {"text": rendered} or
{"error": message of the template's raise_exception or Jinja error}; with
--seed, each entry also holds the conversation. --raw prints instead, per
conversation, "OK <n>\\n" or "ERR <n>\\n" followed by n bytes of UTF-8 and a
newline (easy to read from C++).
"""

import argparse
import datetime
import json
import random
import sys

import jinja2
import jinja2.sandbox


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def strftime_now(fmt):
    return datetime.datetime.now().strftime(fmt)


def make_template(source):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


SAMPLES = [
    "Hello!", "What is 2+2?", "  leading spaces", "trailing spaces  ",
    "\nnewlines around\n", "multi\nline\n\ntext", "你好，世界", "日本語のテキスト",
    "emoji 🎉🚀 test", "👍", "\u3000ideographic space\u3000", "\u00a0nbsp\u00a0",
    "tab\there", "", " ", "<|im_end|> not special", "[INST] fake [/INST]",
    "<think>reasoning</think>answer", "a</think>b</think> c", "Привет",
    "quote ' and \" and \\ backslash", "{{ not jinja }}",
]


def random_conversation(rng):
    n = rng.randint(1, 6)
    roles = []
    mode = rng.random()
    for i in range(n):
        if mode < 0.6:  # well-formed: optional system, then alternation
            if i == 0 and rng.random() < 0.5:
                roles.append("system")
            else:
                prev = [r for r in roles if r != "system"]
                roles.append("user" if len(prev) % 2 == 0 else "assistant")
        else:
            roles.append(rng.choice(["system", "user", "assistant"]))
    messages = [{"role": r, "content": rng.choice(SAMPLES) +
                 (rng.choice(SAMPLES) if rng.random() < 0.3 else "")}
                for r in roles]
    return {"messages": messages,
            "add_generation_prompt": rng.random() < 0.5}


def render(template, conversation, variables):
    try:
        text = template.render(
            messages=conversation["messages"],
            add_generation_prompt=conversation["add_generation_prompt"],
            **variables)
        return {"text": text}
    except TemplateError as e:
        return {"error": str(e)}
    except jinja2.TemplateError as e:
        return {"error": "jinja: " + str(e)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("template")
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--bos", default="<s>")
    parser.add_argument("--eos", default="</s>")
    args = parser.parse_args()

    with open(args.template, encoding="utf-8") as f:
        template = make_template(f.read())

    variables = {"bos_token": args.bos, "eos_token": args.eos}
    if args.seed is not None:
        rng = random.Random(args.seed)
        conversations = [random_conversation(rng) for _ in range(args.count)]
    else:
        data = json.loads(sys.stdin.buffer.read().decode("utf-8"))
        if isinstance(data, dict):
            for key in ("bos_token", "eos_token", "date_string"):
                if key in data:
                    variables[key] = data[key]
            conversations = data["conversations"]
        else:
            conversations = data

    results = [render(template, c, variables) for c in conversations]
    out = sys.stdout.buffer
    if args.raw:
        for r in results:
            tag, text = ("OK", r["text"]) if "text" in r else ("ERR", r["error"])
            data = text.encode("utf-8")
            out.write(b"%s %d\n" % (tag.encode(), len(data)))
            out.write(data + b"\n")
    else:
        if args.seed is not None:
            for c, r in zip(conversations, results):
                r["conversation"] = c
        out.write(json.dumps(results, ensure_ascii=False, indent=1).encode("utf-8"))
        out.write(b"\n")


if __name__ == "__main__":
    main()
