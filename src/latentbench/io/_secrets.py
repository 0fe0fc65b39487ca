"""Keys in a run's stored options: the rules that find them, and the masking of old records.

A live run's options are stored with it (``selection_runs.config``). Today a key written into
them is refused when the configuration is read (``select/live/_config.py`` uses the rules
here); a store written by an earlier version may still hold one (an lm-eval ``model_args``
with ``api_key=...``, a ``base_url`` with a password, a ``[[models]] api_key``). Such a
record is masked whenever it is read (:func:`mask_run_config`), so that ``ls``, ``export``,
``report`` and a resumed run never show the key.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "MASK",
    "argument_secret",
    "mask_argument",
    "mask_run_config",
    "mask_url",
    "secret_query_names",
    "without_masked",
]

MASK = "***"
"""What replaces a key."""

SECRET_QUERY = re.compile(r"(key|token|secret|password|passwd|auth|signature|sig)|^code$", re.I)
"""A ``base_url`` query or fragment parameter that holds a key (``?code=`` is Azure
Functions' key)."""

USERINFO = re.compile(r"([a-z][a-z0-9+.\-]*://)([^/\s?#@,'\"]*)@", re.I)
"""A URL with a user name or password (``https://user:key@host``) inside a longer text."""

_AUTHORIZATION = re.compile(r"(authorization['\"]?\s*[:=]\s*['\"]?|\bbearer\s+)([^\s'\",}]+)", re.I)
"""An ``Authorization`` header's value, or a bearer token."""

_ASSIGNMENT = re.compile(r"(?:^|[\s,{'\"])-{0,2}([A-Za-z_][\w.\-]*)\s*=\s*([^\s,]*)")
"""``name=value`` in a harness argument (``api_key=sk-...``, ``OPENAI_API_KEY=sk-...``)."""

_OPTION_VALUE = re.compile(
    r"(?:^|\s)--?([A-Za-z_][\w.\-]*)\s+([^\s\-'\"][^\s]*|'[^']*'|\"[^\"]*\")"
)
"""``--name value`` in a command line (``--api_key sk-...``, ``--hf_token hf_...``): an
option and the word after it, which is its value unless it is another option."""

_MAPPING_VALUE = re.compile(r"""['"]([A-Za-z_][\w.\-]*)['"]\s*:\s*['"]([^'"]*)['"]""")
"""``'name': 'value'`` in a dict argument (``header={'x-api-key': 'sk-...'}``, Azure's
``api-key`` header)."""

_SECRET_ARGUMENT = re.compile(
    r"(^|[_.\-])(api[_\-]?key|apikey|key|token|secret|password|passwd|pwd|credentials?)$", re.I
)
"""An argument whose last word names a secret (``api_key``, ``HF_TOKEN``; not
``add_bos_token=True``'s flag nor ``max_tokens``, whose values are not secrets). A name
ending in ``_key`` is one only with :data:`_KEY_QUALIFIER` or a value that looks like a
key (:data:`_KEY_LIKE`): ``--sort_key score`` names a field."""

_KEY_QUALIFIER = re.compile(
    r"(^|[_.\-])(api|access|secret|private|auth|subscription|client|account|service|master|"
    r"session|signing|encryption|admin|openai|anthropic|azure|google|gemini|hf|huggingface|"
    r"cohere|mistral|groq|together|fireworks|deepseek|xai)[_.\-]key$|^key$",
    re.I,
)
"""A ``*_key`` argument named for a credential (``api_key``, ``access_key``, ``openai_key``,
``x-api-key``'s ``api-key``, a bare ``key``): a key whatever its value."""

_KEY_LIKE = re.compile(r"(?=[^\s]*[A-Za-z])(?=[^\s]*\d)[A-Za-z0-9_\-+/=.]{16,}")
"""A value shaped like a key: 16 or more characters without spaces, holding letters and
digits (``sk-...``, ``AIza...``); ``score`` or ``doc_id`` are not."""

_SPECIAL_TOKEN_ARGUMENT = re.compile(
    r"(^|[_.\-])(bos|eos|eot|eod|pad|unk|sep|cls|mask|stop|start|begin|end)_token$", re.I
)
"""An argument naming a tokenizer's special token (lm-eval's ``think_end_token='</think>'``
of its vLLM, SGLang and HF backends, ``eos_token=<|endoftext|>``): its value is a token's
text or id, not a key."""

_FLAG_VALUES = {"", "true", "false", "none", "null", "0", "1", "yes", "no"}
"""Values that are no key (a flag)."""


def names_secret(argument: str, value: str) -> bool:
    """Whether ``argument=value`` passes a secret: a name whose last word is a secret's
    (``token``, ``password``, ``api_key``; not a special token's ``think_end_token``) with
    a value that is no flag; a ``*_key`` that is no credential's name (``sort_key``) only
    when its value looks like a key."""
    if not _SECRET_ARGUMENT.search(argument) or _SPECIAL_TOKEN_ARGUMENT.search(argument):
        return False
    if value.lower() in _FLAG_VALUES:
        return False
    if re.search(r"key$", argument, re.I) and not re.search(r"api[_\-]?key$|apikey$", argument,
                                                            re.I):  # fmt: skip
        return bool(_KEY_QUALIFIER.search(argument) or _KEY_LIKE.fullmatch(value))
    return True


def _secret_values(text: str, masked: bool = False) -> list[tuple[int, int, str]]:
    """The spans (start, end) of the values passed to secret arguments in ``text``
    (``name=value``, ``--name value``, ``'name': 'value'``), with their argument's name;
    ``masked``: without the values already :data:`MASK`."""
    found = []
    for pattern in (_ASSIGNMENT, _OPTION_VALUE, _MAPPING_VALUE):
        for match in pattern.finditer(text):
            argument, value = match.group(1), match.group(2).strip("'\"")
            if masked and value == MASK:
                continue
            if names_secret(argument, value):
                found.append((match.start(2), match.end(2), argument))
    return found


def argument_secret(text: str) -> str:
    """What in a harness argument (``model_args``, ``extra_args``, ``command``) holds a key:
    ``"a URL with a user name or password"``, ``"an Authorization header"``, ``"a URL query
    parameter named like a key"`` (:data:`SECRET_QUERY`) or ``"a value for 'NAME'"``; empty
    when none does. What it accepts, :func:`mask_argument` leaves as it is.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
    """
    if USERINFO.search(text):
        return "a URL with a user name or password"
    if re.search(r"authorization['\"]?\s*[:=]|\bbearer\s+\S", text, re.I):
        return "an Authorization header"
    if mask_url(text) != text:  # a URL's ?key=, ?code= (as a base_url's): masked when read
        return "a URL query parameter named like a key"
    found = _secret_values(text)
    return f"a value for {found[0][2]!r}" if found else ""


def mask_argument(text: str) -> str:
    """``text`` (a harness argument) with every key :func:`argument_secret` finds replaced
    by :data:`MASK` (a URL's user name and password, an Authorization header's value, a
    secret argument's value, and a ``base_url=`` in it as :func:`mask_url` masks it).

    Parameters
    ----------
    text : str

    Returns
    -------
    str
    """
    text = mask_url(text)
    text = _AUTHORIZATION.sub(lambda m: m.group(1) + MASK, text)
    for _ in range(64):  # spans move as values shrink: found again until none is left
        found = _secret_values(text, masked=True)
        if not found:
            break
        start, end, _ = found[0]
        value = text[start:end]
        quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[:1] else ""
        text = text[:start] + quote + MASK + quote + text[end:]
    return text


def mask_url(url: str) -> str:
    """``url`` with its user name and password and the values of its secret query and
    fragment parameters (:data:`SECRET_QUERY`) replaced by :data:`MASK`.

    Parameters
    ----------
    url : str

    Returns
    -------
    str
    """
    url = USERINFO.sub(lambda m: m.group(1) + MASK + "@", url)

    def param(match: re.Match[str]) -> str:
        name = match.group(2)
        secret = SECRET_QUERY.search(name) and match.group(3) not in ("", MASK)
        return match.group(1) + name + "=" + (MASK if secret else match.group(3))

    return _QUERY_PARAMETER.sub(param, url)


_QUERY_PARAMETER = re.compile(r"([?&#;])([^=&#;?\s]+)=([^&#;\s]*)")
"""``?name=value`` (or after ``&``, ``#``, ``;``) in a URL, as :func:`mask_url` reads it."""


def secret_query_names(url: str) -> list[str]:
    """The names of ``url``'s query, fragment and ``;`` parameters that :func:`mask_url`
    masks (named like a key, :data:`SECRET_QUERY`, with a value).

    Parameters
    ----------
    url : str

    Returns
    -------
    list of str
    """
    return [
        m.group(2)
        for m in _QUERY_PARAMETER.finditer(url)
        if SECRET_QUERY.search(m.group(2)) and m.group(3) not in ("", MASK)
    ]


_ARGUMENTS = ("model_args", "command", "extra_args")
_URLS = ("base_url", "from", "to")
_KEYS = ("api_key", "apikey")


def mask_run_config(record: Any, path: str = "") -> tuple[Any, list[str]]:
    """A stored run record with every key masked, and the paths of the fields masked.

    Masks what an earlier version stored and today's refuses when it reads the
    configuration: a key in a harness argument (``model_args``, ``command``,
    ``extra_args``: :func:`mask_argument`), credentials in a ``base_url`` (and in the
    ``from``/``to`` of its recorded moves: :func:`mask_url`), a ``[[models]] api_key``.
    A record today's version writes is returned unchanged.

    Parameters
    ----------
    record : object
        The parsed ``selection_runs.config`` (dicts and lists of it are walked).
    path : str, default ""
        The path of ``record`` in the paths returned (``models[0].model_args``).

    Returns
    -------
    (object, list of str)
    """
    masked: list[str] = []
    if isinstance(record, dict):
        out: dict[str, Any] = {}
        for key, value in record.items():
            where = f"{path}.{key}" if path else str(key)
            new: Any = value
            if isinstance(value, str) and key in _ARGUMENTS:
                new = mask_argument(value)
            elif isinstance(value, str) and key in _URLS:
                new = mask_url(value)
            elif isinstance(value, str) and key.lower() in _KEYS and value not in ("", MASK):
                new = MASK
            elif isinstance(value, (dict, list)):
                new, inner = mask_run_config(value, where)
                masked.extend(inner)
            if new != value and isinstance(value, str):
                masked.append(where)
            out[key] = new
        return out, masked
    if isinstance(record, list):
        items = []
        for k, value in enumerate(record):
            new, inner = mask_run_config(value, f"{path}[{k}]")
            items.append(new)
            masked.extend(inner)
        return items, masked
    return record, masked


_MASKED_ASSIGNMENT = re.compile(r"""(^|,)\s*[A-Za-z_][\w.\-]*\s*=\s*(['"]?)\*\*\*\2\s*(?=,|$)""")
"""``name=***`` in a comma-separated harness argument (``model=m,api_key=***``)."""

_MASKED_OPTION = re.compile(r"""(^|\s)--?[A-Za-z_][\w.\-]*(\s+|=)(['"]?)\*\*\*\3(?=\s|$)""")
"""``--name ***`` or ``--name=***`` in a command line."""


def without_masked(record: Any) -> Any:
    """``record`` (a stored run's answer options, parsed and masked) as today's version would
    have written it: without the keys an earlier version stored and reading masked (a
    ``[[models]] api_key`` of ``***``, ``api_key=***`` in a ``model_args``, ``--api_key ***``
    in ``extra_args``). A key says where answers are paid from, not what they are: the
    stored options and today's, which cannot hold a key, are compared without it.

    Parameters
    ----------
    record : object
        Dicts and lists of it are walked.

    Returns
    -------
    object
    """
    if isinstance(record, list):
        return [without_masked(value) for value in record]
    if not isinstance(record, dict):
        return record
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(key, str) and key.lower() in _KEYS and value == MASK:
            continue
        if isinstance(value, str) and key in _ARGUMENTS and MASK in value:
            value = _MASKED_OPTION.sub("", _MASKED_ASSIGNMENT.sub("", value)).strip()
            value = value.removeprefix(",").strip()
        out[key] = without_masked(value)
    return out
