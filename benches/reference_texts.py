"""Texts the reference scripts encode with embscope and with the
library each compares against: several scripts, code, numbers, odd
whitespace, control characters and emoji."""

TEXTS = [
    "Hello, world! Paris is the capital of France.",
    "  leading spaces and trailing   ",
    "line one\nline two\r\n\n\tindented",
    "Numbers: 1234567890, 3.14159, -42, 1e-9, 2026-11-26",
    "def f(x):\n    return x ** 2  # square\n",
    "fn main() { println!(\"{}\", 1 + 2); }",
    "Größenordnung, naïve café, Ærøskøbing",
    "Москва — столица России.",
    "東京は日本の首都です。北京是中国的首都。",
    "서울은 한국의 수도입니다.",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "emoji 🙂🚀👩‍👩‍👧 and ZWJ",
    "URLs: https://example.com/a?b=c&d=e#frag",
    "CAPS LOCK and MiXeD cAsE and camelCaseWords",
    "'s 're 've 'll 'd n't",
    "tabs\t\tand\u00a0non-breaking\u2009spaces",
    "\u0001\u0002 control chars",
    "a" * 300,
    " ".join(str(i) for i in range(100)),
]
