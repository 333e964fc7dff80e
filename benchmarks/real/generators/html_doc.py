"""A long, sloppy HTML page for HTML Tidy to repair and pretty-print.

tidy lexes the page into a tree of nodes (each node, attribute and text lexeme a separate
allocation through one allocator function), repairs it (implied end tags, misnested inline
elements, unclosed paragraphs and list items), then walks the whole tree to print it. The
page is sections of headings, tables, lists and paragraphs with inline markup, written with
the omissions real pages have so that the repair passes have work to do.
"""

from __future__ import annotations

import random

from . import words


def _text(rng: random.Random, vocab: list[str], n: int) -> str:
    return " ".join(rng.choice(vocab) for _ in range(n))


def _section(rng: random.Random, vocab: list[str], i: int, sections: int, rows: int, items: int) -> str:
    out = [f'<div class="sec{i % 37}" id="s{i}"><h2>{_text(rng, vocab, 4)}</h2>']
    out.append("<table border=1>")
    for _ in range(rows):
        # cells without end tags; some rows without <tr>'s end
        out.append("<tr>" + "".join(f'<td class="c{c}">{rng.choice(vocab)} <b>{rng.choice(vocab)}</b>'
                                    for c in range(rng.randint(2, 5))))
    out.append("</table>")
    out.append("<ul>" + "".join(f'<li><a href="#s{rng.randrange(sections)}">{rng.choice(vocab)}</a> '
                                f"<i>{_text(rng, vocab, 2)}" + ("</i>" if rng.random() < 0.7 else "")
                                for _ in range(items)) + "</ul>")
    for _ in range(rng.randint(1, 3)):
        # unclosed paragraphs, misnested inline markup, entities
        out.append(f"<p>{_text(rng, vocab, rng.randint(8, 30))} <em>{rng.choice(vocab)} <strong>"
                   f"{rng.choice(vocab)}</em></strong> &amp; {_text(rng, vocab, 5)}")
    out.append("</div>")
    return "\n".join(out)


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    vocab = words(rng, params["vocab"], lo=3, hi=9)
    sections = params["sections"]
    body = [_section(rng, vocab, i, sections, params["rows"], params["items"]) for i in range(sections)]
    page = "<html><head><title>catalogue</title></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    return {"page.html": page.encode()}
