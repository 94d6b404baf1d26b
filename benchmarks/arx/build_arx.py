"""Build ARX's library (its ``src/main``) from source for ``bench_anonymize.py --arx``, when some of
ARX's bundled jars are missing.

    python benchmarks/arx/build_arx.py ARX_SRC_MAIN ARX_LIB OUT      # prints the classpath to use

ARX_SRC_MAIN is ARX's ``src/main`` and ARX_LIB its ``lib`` folder (the jars are found recursively), both
from a checkout of https://github.com/arx-deidentifier/arx; OUT receives ``stubs/``, ``stubs-classes/``
and ``classes/``. Needs a JDK (``javac``); nothing is downloaded.

With every jar of ARX's repository present, ARX compiles as it is and no stub is needed. Copies that
omit large files lack ``pdfbox-app-2.0.1.jar`` (and may lack ``pdfbox-layout.jar``) and
``hadoop-core-1.2.1.jar``; then ``javac`` fails in two places that anonymization never reaches:

* ``org.deidentifier.arx.certificate`` (the PDF report) imports Apache PDFBox and pdfbox-layout;
* ``aggregates.classification.MultiClassLogisticRegression`` uses Mahout's
  ``OnlineLogisticRegression``, which implements Hadoop's ``org.apache.hadoop.io.Writable``.

For exactly the types and members those use, this script writes COMPILE-ONLY stubs (every method
throws ``UnsupportedOperationException``) and compiles ARX against them. The stubs are NOT part of
the classpath it prints: in the resulting build the PDF certificate and the logistic-regression
classifier cannot run (they fail with ``NoClassDefFoundError``); everything the benchmark calls —
``Data``, hierarchies, ``ARXAnonymizer`` with Flash, the privacy models and quality metrics — is
ARX's own unmodified code. ARX's sources are not touched.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

_T = 'throw new UnsupportedOperationException("compile-only stub");'
_IO = "java.io.IOException"

# path -> source; the members are exactly those ARX's certificate / classification code uses
STUBS = {
    "org/apache/pdfbox/pdmodel/PDDocument.java": f"""package org.apache.pdfbox.pdmodel;

public class PDDocument {{
    public static PDDocument load(java.io.File file) throws {_IO} {{ {_T} }}
    public static PDDocument load(java.io.InputStream input) throws {_IO} {{ {_T} }}
    public void save(java.io.OutputStream output) throws {_IO} {{ {_T} }}
    public void close() throws {_IO} {{ {_T} }}
}}
""",
    "org/apache/pdfbox/pdmodel/font/PDFont.java": """package org.apache.pdfbox.pdmodel.font;

public abstract class PDFont {
}
""",
    "org/apache/pdfbox/multipdf/Overlay.java": f"""package org.apache.pdfbox.multipdf;

import org.apache.pdfbox.pdmodel.PDDocument;

public class Overlay {{
    public enum Position {{ FOREGROUND, BACKGROUND }}
    public Overlay() {{ }}
    public void setInputPDF(PDDocument input) {{ {_T} }}
    public void setAllPagesOverlayPDF(PDDocument overlay) {{ {_T} }}
    public void setOverlayPosition(Position position) {{ {_T} }}
    public PDDocument overlay(java.util.Map<Integer, String> specificPageOverlayFile) throws {_IO} {{ {_T} }}
}}
""",
    "rst/pdfbox/layout/elements/Document.java": f"""package rst.pdfbox.layout.elements;

import rst.pdfbox.layout.elements.render.LayoutHint;

public class Document {{
    public Document(float marginLeft, float marginRight, float marginTop, float marginBottom) {{ {_T} }}
    public void add(Paragraph element) {{ {_T} }}
    public void add(Paragraph element, LayoutHint hint) {{ {_T} }}
    public void add(VerticalSpacer element) {{ {_T} }}
    public void add(ControlElement element) {{ {_T} }}
    public void save(java.io.File file) throws {_IO} {{ {_T} }}
}}
""",
    "rst/pdfbox/layout/elements/Paragraph.java": f"""package rst.pdfbox.layout.elements;

import org.apache.pdfbox.pdmodel.font.PDFont;
import rst.pdfbox.layout.text.Alignment;
import rst.pdfbox.layout.text.BaseFont;
import rst.pdfbox.layout.text.Indent;

public class Paragraph {{
    public Paragraph() {{ }}
    public float getHeight() throws {_IO} {{ {_T} }}
    public void setAlignment(Alignment alignment) {{ {_T} }}
    public void addText(String text, float fontSize, PDFont font) throws {_IO} {{ {_T} }}
    public void addMarkup(String markup, float fontSize, BaseFont baseFont) throws {_IO} {{ {_T} }}
    public void add(Indent fragment) {{ {_T} }}
}}
""",
    "rst/pdfbox/layout/elements/VerticalSpacer.java": f"""package rst.pdfbox.layout.elements;

public class VerticalSpacer {{
    public VerticalSpacer(float height) {{ {_T} }}
}}
""",
    "rst/pdfbox/layout/elements/ControlElement.java": """package rst.pdfbox.layout.elements;

public class ControlElement {
    public static final ControlElement NEWPAGE = new ControlElement();
    private ControlElement() { }
}
""",
    "rst/pdfbox/layout/elements/render/LayoutHint.java": """package rst.pdfbox.layout.elements.render;

public interface LayoutHint {
}
""",
    "rst/pdfbox/layout/elements/render/VerticalLayoutHint.java": """package rst.pdfbox.layout.elements.render;

public class VerticalLayoutHint implements LayoutHint {
    public static final VerticalLayoutHint LEFT = new VerticalLayoutHint();
    public static final VerticalLayoutHint CENTER = new VerticalLayoutHint();
    private VerticalLayoutHint() { }
}
""",
    "rst/pdfbox/layout/text/Alignment.java": """package rst.pdfbox.layout.text;

public enum Alignment { Left, Center, Right, Justify }
""",
    "rst/pdfbox/layout/text/BaseFont.java": f"""package rst.pdfbox.layout.text;

import org.apache.pdfbox.pdmodel.font.PDFont;

public enum BaseFont {{
    Times, Courier, Helvetica;
    public PDFont getPlainFont() {{ {_T} }}
    public PDFont getBoldFont() {{ {_T} }}
    public PDFont getItalicFont() {{ {_T} }}
}}
""",
    "rst/pdfbox/layout/text/SpaceUnit.java": """package rst.pdfbox.layout.text;

public enum SpaceUnit { em, pt }
""",
    "rst/pdfbox/layout/text/Indent.java": f"""package rst.pdfbox.layout.text;

import org.apache.pdfbox.pdmodel.font.PDFont;

public class Indent {{
    public Indent(String label, float indentWidth, SpaceUnit indentUnit, float fontSize, PDFont font,
                  Alignment alignment) throws {_IO} {{ {_T} }}
}}
""",
    "rst/pdfbox/layout/util/CompatibilityHelper.java": f"""package rst.pdfbox.layout.util;

public class CompatibilityHelper {{
    public static String getBulletCharacter(int level) {{ {_T} }}
}}
""",
    "rst/pdfbox/layout/util/Enumerator.java": """package rst.pdfbox.layout.util;

public interface Enumerator {
    String next();
}
""",
    "rst/pdfbox/layout/util/Enumerators.java": f"""package rst.pdfbox.layout.util;

public class Enumerators {{
    public static class ArabicEnumerator implements Enumerator {{
        public ArabicEnumerator() {{ {_T} }}
        public String next() {{ {_T} }}
    }}
    public static class RomanEnumerator implements Enumerator {{
        public RomanEnumerator() {{ {_T} }}
        public String next() {{ {_T} }}
    }}
    public static class AlphabeticEnumerator implements Enumerator {{
        public AlphabeticEnumerator() {{ {_T} }}
        public String next() {{ {_T} }}
    }}
    public static class LowerCaseAlphabeticEnumerator implements Enumerator {{
        public LowerCaseAlphabeticEnumerator() {{ {_T} }}
        public String next() {{ {_T} }}
    }}
}}
""",
    "org/apache/hadoop/io/Writable.java": f"""package org.apache.hadoop.io;

public interface Writable {{
    void write(java.io.DataOutput out) throws {_IO};
    void readFields(java.io.DataInput in) throws {_IO};
}}
""",
}

HEADER = (
    "// COMPILE-ONLY stub written by ppdm's benchmarks/arx/build_arx.py so that ARX compiles without the\n"
    "// missing jar. Not the real library: every method throws. Never on a runtime classpath.\n"
)


def _javac(args: list[str]) -> None:
    p = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"javac failed:\n{p.stderr.strip()[-3000:]}")


def build(src_main: Path, lib: Path, out: Path) -> str:
    """Write and compile the stubs, compile ARX's ``src/main`` into ``out/classes`` (resources copied);
    return the runtime classpath (ARX's classes and jars, without the stubs)."""
    if not shutil.which("javac"):
        raise SystemExit("needs a JDK (javac on PATH)")
    jars = sorted(str(p) for p in lib.rglob("*.jar"))
    stubs, stub_classes, classes = out / "stubs", out / "stubs-classes", out / "classes"
    for d in (stubs, stub_classes, classes):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    for rel, text in STUBS.items():
        f = stubs / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(HEADER + text)
    _javac(["-d", str(stub_classes), *(str(p) for p in sorted(stubs.rglob("*.java")))])
    sources = sorted(str(p) for p in src_main.rglob("*.java"))
    _javac(["-d", str(classes), "-cp", ":".join([*jars, str(stub_classes)]), *sources])
    for res in src_main.rglob("*"):  # resources ARX loads from its classpath (risk tables, watermark)
        if res.is_file() and res.suffix != ".java":
            dst = classes / res.relative_to(src_main)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(res, dst)
    return ":".join([str(classes), *jars])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src_main", type=Path, help="ARX's src/main")
    ap.add_argument("lib", type=Path, help="ARX's lib folder (jars found recursively)")
    ap.add_argument("out", type=Path, help="output folder (stubs/, stubs-classes/, classes/)")
    a = ap.parse_args(argv)
    cp = build(a.src_main, a.lib, a.out)
    (a.out / "classpath.txt").write_text(cp + "\n")
    print(cp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
