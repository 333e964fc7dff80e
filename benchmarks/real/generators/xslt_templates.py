"""An XML catalogue and an XSLT 1.0 stylesheet for Xalan-C++ (`Xalan`, Apache's processor on
Xerces-C++: the program SPEC CPU2017's xalancbmk is built from, where HALO measured its
largest gain on a real program).

The stylesheet is template-driven: every item is transformed by `apply-templates` (attribute
value templates, string functions, conditional attributes, a keyed look-up per item), and
categories are listed in the document and grouped through `key()`, then sorted. It differs
from `xslt` (xsltproc's) where Xalan-C++ is quadratic and libxslt is not: Muenchian grouping
over every item and `string(.)` of the whole document took Xalan minutes on inputs that
xsltproc transforms in seconds, which would have measured one slow code path rather than
the processor's allocation pattern. Xalan-C++ builds its source tree and result strings
through Xerces' memory manager, i.e. many small `operator new` calls.
"""

from __future__ import annotations

import random
from xml.sax.saxutils import escape

from . import words

STYLESHEET = """<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="xml" indent="yes"/>
  <xsl:key name="by-cat" match="item" use="@cat"/>
  <xsl:key name="by-tag" match="item" use="tag"/>
  <xsl:template match="/catalog">
    <report>
      <xsl:for-each select="cats/c">
        <xsl:sort select="."/>
        <xsl:variable name="members" select="key('by-cat', .)"/>
        <category name="{.}" count="{count($members)}" total="{sum($members/price)}">
          <xsl:for-each select="$members">
            <xsl:sort select="price" data-type="number" order="descending"/>
            <xsl:sort select="name"/>
            <xsl:if test="position() &lt;= 3">
              <top rank="{position()}" id="{@id}"><xsl:value-of select="concat(translate(name, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'), ' / ', substring(desc, 1, 20))"/></top>
            </xsl:if>
          </xsl:for-each>
        </category>
      </xsl:for-each>
      <items><xsl:apply-templates select="item"/></items>
      <summary items="{count(item)}" tags="{count(item/tag)}" value="{sum(item/price)}"/>
    </report>
  </xsl:template>
  <xsl:template match="item">
    <entry id="{@id}" cat="{@cat}" band="{floor(price div 1000)}">
      <xsl:if test="count(tag) &gt; 2"><xsl:attribute name="tagged">many</xsl:attribute></xsl:if>
      <xsl:value-of select="substring-before(concat(desc, ' '), ' ')"/>
      <xsl:apply-templates select="tag"/>
      <related n="{count(key('by-tag', tag[1]))}"/>
    </entry>
  </xsl:template>
  <xsl:template match="tag"><t len="{string-length(.)}"><xsl:value-of select="translate(., 'aeiou', 'AEIOU')"/></t></xsl:template>
</xsl:stylesheet>
"""


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    vocab = words(rng, params["vocab"])
    cats = words(rng, params["categories"], lo=4, hi=8)
    out = ['<?xml version="1.0"?>', "<catalog>", "<cats>" + "".join(f"<c>{c}</c>" for c in cats) + "</cats>"]
    for i in range(params["items"]):
        tags = "".join(f"<tag>{t}</tag>" for t in rng.sample(vocab, rng.randint(0, params["tags"])))
        desc = escape(" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 25))))
        out.append(f'<item id="i{i}" cat="{rng.choice(cats)}"><name>{rng.choice(vocab)}</name>'
                   f"<price>{rng.randint(1, 9999)}</price><desc>{desc}</desc>{tags}</item>")
    out.append("</catalog>")
    return {"catalog.xml": ("\n".join(out) + "\n").encode(), "report.xsl": STYLESHEET.encode()}
