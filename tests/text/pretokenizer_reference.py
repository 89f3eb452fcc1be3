#!/usr/bin/python3
"""Reference pre-tokenizer splits for tests/text/pretokenizer_test.cc.

Runs each model's published split regex(es) (from llama.cpp's llama-vocab.cpp
and the models' tokenizer.json files) with the `regex` module over a set of
tricky strings, the way Hugging Face's Split(behavior="isolated") applies them:
every regex splits every piece left by the previous one into its matches and
the gaps between them, both kept.

Output, one line per (pre-tokenizer, text):
    <name> TAB <hex of text> TAB <hex piece>,<hex piece>,...
"""
import sys

import regex

GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
GPT4O = (r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
         r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
         r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
# GPT-2 as llama.cpp writes it inside multi-step sequences (no final \s+;
# the gap it leaves becomes a piece anyway).
GPT2_STEP = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"""
CJK = "[一-龥ࠀ-一가-퟿]+"
# Written with \u escapes where a character would change under Unicode
# normalization (U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126, U+212A).
DEEPSEEK_LETTERS = (
    "[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-" "\u1f7d" "ᾀ-ᾴᾶ-ᾼ" "\u1fbe" "ῂ-ῄῆ-ῌῐ-" "\u1fd3" "ῖ-" "\u1fdb" "ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ" "\u2126" "ℨ" "\u212a" "-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]")
DEEPSEEK_PUNCT = "[!-/:-~！-／：-～‘-‟　-。]"

PATTERNS = {
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2_STEP, r"\p{N}+", "[0-9][0-9][0-9]"],
    "gpt2": [GPT2],
    "mpt": [GPT2],
    "llama-bpe": [LLAMA3],
    "qwen2": [QWEN2],
    "gpt-4o": [GPT4O],
    "deepseek-llm": ["[\r\n]", r"\s?" + DEEPSEEK_LETTERS + "+", r"\s?" + DEEPSEEK_PUNCT + "+",
                     r"\s+$", CJK, r"\p{N}+"],
    "deepseek-coder": ["[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2_STEP, "[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2_STEP],
    "refact": [r"\p{N}", GPT2_STEP],
    "smollm": [r"\p{N}", GPT2_STEP],
}

TEXTS = [
    "",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n\n",
    " \n \n\n  \t\t ",
    "Hello world",
    " Hello World ",
    "HELLO WORLD helloWorld HelloWORLD",
    "I'm you're they've she'll he'd it's don't",
    "I'M YOU'RE THEY'VE SHE'LL HE'D IT'S DON'T 'S 'Ll",
    "'s's 'ſ x'ſt",
    "1 12 123 1234 12345 1234567 3.14159 1,000,000",
    "a1b22c333d4444",
    "١٢٣ ४५६ Ⅷ ½",
    "你好世界，这是一个测试。",
    "日本語のテキスト カタカナ ひらがな",
    "한국어 텍스트입니다",
    "ภาษาไทยเป็นภาษา",
    "Привет мир, Ελληνικά γράμματα",
    "مرحبا بالعالم שלום עולם",
    "🦙 llama 🚀🚀 emoji 👍🏽 👨‍👩‍👧 ❤️",
    "e\u0301 cafe\u0301 n\u0303o a\u0308\u0304",
    "Ǆemo ǅungla ǈ ʼn ƻ µ",
    "   leading and trailing   ",
    "tabs\tand\t\tmore\t",
    "line1\nline2\r\nline3\r\r\n\nend",
    "x  \n  y",
    "punct!!! ??? ... ,,, ;; :) (a) [b] {c} <d> \"q\" `t`",
    "$100 + 5^2 = ~x | y <=> z `code`",
    "def f(x):\n    return x**2  # comment\n\n\tpass",
    "http://example.com/path?q=1&r=2#frag",
    "a/b//c ///d\n/",
    "   !!!\n\n\t???",
    "\u00a0nbsp\u2003em\u3000ideo\u2028ls\u2029ps\u0085nel\x0bvt\x0cff",
    "<|endoftext|> <s> </s> [INST]",
    "mixed日本English中文123abc",
    "Ａｂｃ　全角！＂＃",
    "‘quotes’ “double” „low“ 。",
    "'",
    "''''",
    "' '",
    "a'",
    "'x",
    "\r",
    "\r\n",
    " \r\n",
    "! \n",
    "Hello\n\n\nWorld  ",
    "ΑΒΓ αβγ ΆΈΉ",
    "ﬁ ﬀ ﬃ",
    "Ⓐ ⓑ ℃ № ™",
]


def split(patterns, text):
    pieces = [text]
    for pattern in patterns:
        compiled = regex.compile(pattern)
        out = []
        for piece in pieces:
            last = 0
            for m in compiled.finditer(piece):
                if m.start() > last:
                    out.append(piece[last:m.start()])
                if m.end() > m.start():
                    out.append(m.group())
                last = m.end()
            if last < len(piece):
                out.append(piece[last:])
        pieces = out
    return pieces


def hexof(s):
    return s.encode("utf-8").hex()


def main():
    for name, patterns in PATTERNS.items():
        for text in TEXTS:
            pieces = split(patterns, text)
            assert "".join(pieces) == text
            sys.stdout.write("%s\t%s\t%s\n" % (name, hexof(text), ",".join(hexof(p) for p in pieces)))


if __name__ == "__main__":
    main()
