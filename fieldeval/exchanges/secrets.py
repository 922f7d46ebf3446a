"""What may hold a secret: a setting's name or a text's shape, decided by rule so that names nobody listed are caught.

A cassette is committed and a replay's refusal is printed into CI logs, so a model setting is
written or shown only when neither its name nor its value looks like a credential or an
address. Both rules err towards leaving a setting out: a setting left out is only not compared
on replay, while a secret once written stays in the repository's history.

**Names.** A name is split into words after lowercasing each word on its own: at `_`, `-`, `.`,
spaces and any other character that is not a letter or digit, and at case changes, where a run
of capitals is one word (`API_KEY` is `api key`, `XApiKey` is `x api key`, `hfToken` is `hf
token`). Width and compatibility forms are folded first (a full-width `ＡＰＩ＿ＫＥＹ` is `API_KEY`).
A word marks a secret when it has one of `SECRET_PARTS` inside it, which catches glued names
(`apikey`, `accesskey`, `secretkey`, `passwd`, `authtoken`, `credz`), or is one of `SECRET_WORDS` (a plural
too), short words that count only on their own (`stripe_sk`, `pin`, `sig`: not `task`, `spin`,
`signal`); it marks an address likewise (`ADDRESS_WORDS`, `ADDRESS_PARTS`: `base_url`,
`baseurl`, `https_proxy`). `token` inside a word marks a secret unless the value is a number or a
list of numbers: that is a count (`max_tokens`, `budget_tokens`, `stop_token_ids`).

**Values.** A text is left out, whatever its name, when it holds a URL (`://`), an HTTP
authorization (`Bearer …`, `Basic …`, `Digest …`), user info before a host (`user:pass@host`,
with or without a scheme), `name=value` or `name: value` where the name marks a secret
(`password=…`, `X-Api-Key: …`), a PEM block, or a key-shaped run: a known key prefix (`sk-`,
`AKIA…`, `ghp_`, `hf_`, a JWT's `eyJ…`), 20 or more letters and digits with no separator between
them, mixing both (hex keys, `AKIA…`), or 20 or more characters of the base64 or URL-safe alphabet
that change between capitals, small letters and digits at least once every 5 (`RANDOM_CHANGES`), as
random keys do and model ids (`anthropic.claude-3-5-sonnet-20240620-v1:0`,
`meta-llama/Meta-Llama-3.1-8B-Instruct`: words and numbers between separators) do not.
A secret with no such shape (a bare password under an innocent name) cannot be told from text;
the name rule is what catches it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# A word of a name that is one of these marks a secret (compared also without a final `s`); inside a
# longer word they are too often something else (`spin`, `signal`, `seven`) to count.
SECRET_WORDS = frozenset(
    {"pin", "sig", "otp", "totp", "mfa", "pem", "ssh", "pk", "sk", "pw", "salt", "saml", "sas", "psk"}
    | {"env", "environ"}
)
# A word of a name that has one of these inside it marks a secret: glued names such as `apikey`.
SECRET_PARTS = (
    "key", "secret", "pass", "pwd", "jwt", "cred", "auth", "bearer", "cookie", "session", "signature",
    "private", "cert", "header", "hmac", "login",
)  # fmt: skip
# `token` inside a word marks a secret, except over a number or a list of numbers (a count of tokens).
COUNT_PART = "token"
ADDRESS_WORDS = frozenset({"uri", "addr", "address", "socket", "netloc"})
ADDRESS_PARTS = ("url", "host", "endpoint", "proxy", "proxies", "webhook", "dsn")
# A run of the base64 / URL-safe alphabet is key-shaped when its character class changes at least this
# often per letter or digit: random keys change about every second character, model ids at most about
# every sixth. Of 10,000 random base64 keys, 0.26% of 20 characters and none of 40 escape every rule here.
RANDOM_CHANGES = 0.2

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SCHEME = re.compile(r"(?i)\b(bearer|basic|digest|negotiate|aws4-hmac-sha256)\s+\S")
# Bounded, and a name only where a word starts, so that no text makes a search take longer than linear time.
_USER_INFO = re.compile(r"[^\s/@:]{1,256}:[^\s@]{1,256}@[^\s/@]")
_NAMED = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]*)\s*[=:](?=\s*\S)")
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:sk|pk|rk)[-_][\w-]{8,}|gh[pousr]_\w{16,}|github_pat_\w{16,}|glpat-[\w-]{16,}"
    r"|xox[a-z]-[\w-]{8,}|hf_[A-Za-z0-9]{16,}|A[KS]IA[A-Z0-9]{16}|AIza[\w-]{20,}|eyJ[\w-]{8,}|ya29\.[\w-]{16,})"
)
_SOLID = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*[A-Za-z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{20,}(?![A-Za-z0-9])")
_RUN = re.compile(r"[A-Za-z0-9+/=_-]{20,}")


def name_words(name: str) -> list[str]:
    """The lowercased words of a name, split at separators and case changes (a run of capitals is one word)."""
    return [word.lower() for word in _WORD.findall(unicodedata.normalize("NFKC", name))]


def name_hides(name: str, value: Any) -> bool:
    """Whether a setting `name: value` may hold a secret or an address, by the words of its name."""
    counts = False
    for word in name_words(name):
        forms = {word, word[:-1] if word.endswith("s") else word}
        if forms & (SECRET_WORDS | ADDRESS_WORDS) or any(part in word for part in SECRET_PARTS + ADDRESS_PARTS):
            return True
        counts = counts or COUNT_PART in word
    return counts and not _numbers(value)


def carries_credential(text: str) -> bool:
    """Whether a text holds a credential or an address by its shape, whatever the setting is called."""
    text = unicodedata.normalize("NFKC", text)
    if "://" in text or "-----BEGIN" in text or _SCHEME.search(text) or ("@" in text and _USER_INFO.search(text)):
        return True
    if any(name_hides(match.group(1), "") for match in _NAMED.finditer(text)):
        return True
    if _PREFIXED.search(text) or _SOLID.search(text):
        return True
    return any(_changes(run) >= RANDOM_CHANGES for run in _RUN.findall(text))


def _numbers(value: Any) -> bool:
    """Whether `value` is a number, or a list of numbers: what a count of tokens (or token ids) is."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, (int, float)) for item in value)
    return isinstance(value, (int, float))


def _changes(run: str) -> float:
    """How often, per letter or digit, the class (capital, small letter, digit) changes between neighbours.

    A capital followed by small letters starts a word (`Llama`) and is no change, unless a capital
    came just before it too (`KNgKHq`, as random text has).
    """
    kinds = ["u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "" for c in run]
    changes = 0
    for i in range(len(run) - 1):
        a, b = kinds[i], kinds[i + 1]
        if not a or not b or a == b:
            continue
        if a == "u" and b == "l" and not (i > 0 and kinds[i - 1] == "u"):
            continue
        changes += 1
    return changes / max(1, sum(1 for kind in kinds if kind))
