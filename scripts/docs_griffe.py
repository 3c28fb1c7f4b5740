"""A Griffe extension for the API reference (mkdocs.yml names it): reads graphlab's docstrings as written.

Griffe's Google-style parser knows "Examples:" but not "Example:", so an example written under
"Example:" is rendered as a paragraph of Markdown (and `xs[:3]` in it becomes a broken
cross-reference); and it reads "a, b: text" under "Args:" (or "Attributes:") as one item called "a, b". This
extension rewrites both in the loaded docstrings only (the source is untouched): "Example:" becomes
"Examples:", and "a, b: text" becomes one item per name.
"""
from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.M)
_ARGS_HEADER = re.compile(
    r"^(\s*)(Args|Arguments|Parameters|Params|Attributes|Other Parameters|Keyword Args|Keyword Arguments):\s*$")
_MULTI_NAME = re.compile(r"^(\s+)([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)(\s*(?:\([^)]*\))?:.*)$")


def rewrite(text: str) -> str:
    text = _EXAMPLE.sub(r"\1Examples:", text)
    lines, out, args_indent, i = text.splitlines(), [], None, 0
    while i < len(lines):
        line = lines[i]
        i += 1
        indent = len(line) - len(line.lstrip())
        header = _ARGS_HEADER.match(line)
        if header:
            args_indent = indent
        elif args_indent is not None and line.strip() and indent <= args_indent:
            args_indent = None  # the next section or paragraph
        multi = _MULTI_NAME.match(line) if args_indent is not None and indent > args_indent else None
        if not multi:
            out.append(line)
            continue
        more = []  # the item's continuation lines, repeated for each name
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            more.append(lines[i])
            i += 1
        trailing = []
        while more and not more[-1].strip():
            trailing.insert(0, more.pop())
        for name in multi.group(2).split(","):
            out += [f"{multi.group(1)}{name.strip()}{multi.group(3)}", *more]
        out += trailing
    return "\n".join(out)


class GraphlabDocstrings(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
