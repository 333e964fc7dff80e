"""An XML catalogue and an XSLT 1.0 stylesheet for xsltproc (libxml2/libxslt).

The document is parsed into a DOM of small nodes; the stylesheet groups by key
(Muenchian grouping), sorts, numbers, builds strings and result-tree fragments, so
xsltproc allocates nodes, strings and XPath node sets throughout.
"""

from __future__ import annotations

import random
from xml.sax.saxutils import escape

from . import words

STYLESHEET = """<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="xml" indent="yes"/>
  <xsl:key name="by-cat" match="item" use="@cat"/>
  <xsl:key name="tag-in-cat" match="tag" use="concat(../@cat, '|', .)"/>
  <xsl:template match="/">
    <report>
      <xsl:for-each select="//item[generate-id() = generate-id(key('by-cat', @cat)[1])]">
        <xsl:sort select="@cat"/>
        <xsl:variable name="members" select="key('by-cat', @cat)"/>
        <category name="{@cat}" count="{count($members)}" total="{sum($members/price)}">
          <xsl:for-each select="$members">
            <xsl:sort select="price" data-type="number" order="descending"/>
            <xsl:sort select="name"/>
            <xsl:if test="position() &lt;= 3">
              <top rank="{position()}" id="{@id}">
                <xsl:value-of select="concat(translate(name, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'), ' / ', substring(desc, 1, 20))"/>
              </top>
            </xsl:if>
          </xsl:for-each>
          <tags><xsl:apply-templates select="$members/tag[generate-id() = generate-id(key('tag-in-cat', concat(../@cat, '|', .))[1])][position() &lt;= 5]"/></tags>
        </category>
      </xsl:for-each>
      <summary items="{count(//item)}" tags="{count(//tag)}" words="{string-length(normalize-space(string(/)))}"/>
    </report>
  </xsl:template>
  <xsl:template match="tag"><t><xsl:value-of select="."/></t></xsl:template>
</xsl:stylesheet>
"""


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    vocab = words(rng, params["vocab"])
    cats = words(rng, params["categories"], lo=4, hi=8)
    out = ['<?xml version="1.0"?>', "<catalog>"]
    for i in range(params["items"]):
        tags = "".join(f"<tag>{t}</tag>" for t in rng.sample(vocab, rng.randint(0, params["tags"])))
        desc = escape(" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 25))))
        out.append(f'<item id="i{i}" cat="{rng.choice(cats)}"><name>{rng.choice(vocab)}</name>'
                   f"<price>{rng.randint(1, 9999)}</price><desc>{desc}</desc>{tags}</item>")
    out.append("</catalog>")
    return {"catalog.xml": ("\n".join(out) + "\n").encode(), "report.xsl": STYLESHEET.encode()}
